"""The demo's tiles: the grid covers the raster exactly, every tile keeps its ground, bands and values."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import rasterio
from rasterio.transform import from_origin

from hastegeo_dev.tiles import cut


def test_tiles_cover_the_raster_and_keep_their_ground(tmp_path: Path) -> None:
    source = tmp_path / "scene.tif"
    data = np.arange(3 * 5 * 7, dtype="uint16").reshape(3, 5, 7)
    profile = {"driver": "GTiff", "width": 7, "height": 5, "count": 3, "dtype": "uint16", "nodata": 0}
    with rasterio.open(
        source, "w", **profile, crs="EPSG:32633", transform=from_origin(500_000, 4_000_000, 10, 10)
    ) as out:
        out.write(data)
    tiles = cut(source, tmp_path / "tiles", 2, 3)
    assert [tile.name for tile in tiles] == ["r0c0", "r0c1", "r0c2", "r1c0", "r1c1", "r1c2"]
    rebuilt = np.zeros_like(data)
    for tile in tiles:
        with rasterio.open(tile.path) as dataset:
            assert (dataset.count, dataset.crs.to_epsg(), dataset.nodata) == (3, 32633, 0)
            # The tile's own geotransform puts its first pixel where it lay in the scene.
            col = round((dataset.transform.c - 500_000) / 10)
            row = round((4_000_000 - dataset.transform.f) / 10)
            rebuilt[:, row : row + dataset.height, col : col + dataset.width] = dataset.read()
    assert (rebuilt == data).all()
    with rasterio.open(tiles[0].path) as first, rasterio.open(tiles[-1].path) as last:
        assert (first.width, first.height, last.width, last.height) == (3, 3, 2, 2)


def test_more_parts_than_pixels_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "tiny.tif"
    with rasterio.open(
        source,
        "w",
        driver="GTiff",
        width=2,
        height=2,
        count=1,
        dtype="uint8",
        crs="EPSG:32633",
        transform=from_origin(0, 2, 1, 1),
    ) as out:
        out.write(np.ones((1, 2, 2), dtype="uint8"))
    with pytest.raises(ValueError, match="cannot cut 2 pixels into 3 parts"):
        cut(source, tmp_path / "tiles", 3, 1)
