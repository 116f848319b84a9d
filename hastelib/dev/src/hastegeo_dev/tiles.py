"""Cut a GeoTIFF into a grid of georeferenced tiles: what ``make demo`` runs inference on, one job per tile."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Tile:
    """One tile: where it lies in the grid and the file it was written to."""

    row: int
    col: int
    path: Path

    @property
    def name(self) -> str:
        return f"r{self.row}c{self.col}"


def cut(source: Path, folder: Path, rows: int, cols: int) -> list[Tile]:
    """Write ``rows`` x ``cols`` tiles of ``source`` into ``folder``, row by row; each keeps the source's bands,
    CRS, nodata and data type, with its own geotransform, so a tile is a raster of its own ground."""
    import rasterio  # geospatial imports only when tiles are cut
    from rasterio.windows import Window

    folder.mkdir(parents=True, exist_ok=True)
    tiles = []
    with rasterio.open(source) as dataset:
        heights = _split(dataset.height, rows)
        widths = _split(dataset.width, cols)
        top = 0
        for row, height in enumerate(heights):
            left = 0
            for col, width in enumerate(widths):
                window = Window(left, top, width, height)
                profile = {
                    "driver": "GTiff",
                    "width": width,
                    "height": height,
                    "count": dataset.count,
                    "dtype": dataset.dtypes[0],
                    "crs": dataset.crs,
                    "transform": dataset.window_transform(window),
                    "nodata": dataset.nodata,
                }
                tile = Tile(row, col, folder / f"tile_r{row}c{col}.tif")
                with rasterio.open(tile.path, "w", **profile) as out:
                    out.write(dataset.read(window=window))
                tiles.append(tile)
                left += width
            top += height
    return tiles


def _split(size: int, parts: int) -> list[int]:
    """``size`` pixels in ``parts`` runs as even as whole pixels allow (the first ones one longer)."""
    if not 1 <= parts <= size:
        raise ValueError(f"cannot cut {size} pixels into {parts} parts")
    base, extra = divmod(size, parts)
    return [base + (1 if index < extra else 0) for index in range(parts)]
