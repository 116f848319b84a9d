"""Plan a mosaic grid over several rasters (optionally clipped) and read it block by block.

The output grid uses the first raster's CRS and pixel size, snapped to its
pixel lattice so aligned inputs are copied pixel for pixel. A source on the
same lattice is read with a plain window; any other source (another CRS or
resolution) is seen through a ``WarpedVRT`` built on the output grid, so both
cases answer "give me this output window". Where sources overlap, the first
one listed with a valid pixel wins.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from affine import Affine
from rasterio.vrt import WarpedVRT
from rasterio.warp import transform_bounds
from rasterio.windows import Window

from hastegeo.workloads._run import geo
from hastegeo.workloads._run.harness import WorkloadError

Bounds = tuple[float, float, float, float]
EPSILON = 1e-6


@dataclass(frozen=True)
class Grid:
    crs: Any
    transform: Affine
    width: int
    height: int
    count: int
    dtype: str
    nodata: float

    @property
    def bounds(self) -> Bounds:
        left, top = self.transform @ (0, 0)
        right, bottom = self.transform @ (self.width, self.height)
        return (left, bottom, right, top)


def _bounds_in(dataset: Any, crs: Any) -> Bounds:
    if dataset.crs == crs:
        return tuple(dataset.bounds)
    return tuple(transform_bounds(dataset.crs, crs, *dataset.bounds, densify_pts=21))


def _describe_wgs84(bounds: Bounds, crs: Any) -> str:
    west, south, east, north = transform_bounds(crs, geo.WGS84, *bounds, densify_pts=21)
    return f"[{west:.5f}, {south:.5f}, {east:.5f}, {north:.5f}]"


def plan_grid(datasets: list[Any], clip: Bounds | None = None) -> Grid:
    """The output grid covering all ``datasets`` (intersected with ``clip``, given in the first one's CRS)."""
    reference = datasets[0]
    for dataset in datasets[1:]:
        if dataset.count != reference.count:
            raise WorkloadError(f"sources have {reference.count} and {dataset.count} bands; they must match")
        if dataset.dtypes[0] != reference.dtypes[0]:
            raise WorkloadError(
                f"sources have data types {reference.dtypes[0]} and {dataset.dtypes[0]}; they must match"
            )
    crs = reference.crs
    extents = [_bounds_in(d, crs) for d in datasets]
    union: Bounds = (
        min(e[0] for e in extents),
        min(e[1] for e in extents),
        max(e[2] for e in extents),
        max(e[3] for e in extents),
    )
    area = union
    if clip is not None:
        area = (max(union[0], clip[0]), max(union[1], clip[1]), min(union[2], clip[2]), min(union[3], clip[3]))
        if area[0] >= area[2] or area[1] >= area[3]:
            raise WorkloadError(
                f"bbox does not overlap the imagery (imagery covers lon/lat {_describe_wgs84(union, crs)})"
            )
    xres, yres = reference.transform.a, -reference.transform.e
    x0, y0 = reference.transform.c, reference.transform.f
    col0 = math.floor((area[0] - x0) / xres + EPSILON)
    col1 = math.ceil((area[2] - x0) / xres - EPSILON)
    row0 = math.floor((y0 - area[3]) / yres + EPSILON)
    row1 = math.ceil((y0 - area[1]) / yres - EPSILON)
    if col1 <= col0 or row1 <= row0:
        raise WorkloadError("bbox is smaller than one pixel of the imagery")
    nodata = next((d.nodata for d in datasets if d.nodata is not None), None)
    return Grid(
        crs=crs,
        transform=Affine(xres, 0.0, x0 + col0 * xres, 0.0, -yres, y0 - row0 * yres),
        width=col1 - col0,
        height=row1 - row0,
        count=reference.count,
        dtype=reference.dtypes[0],
        nodata=0.0 if nodata is None else float(nodata),
    )


class SourceReader:
    """Reads one source's pixels for an output window: data (bands, rows, cols) and validity (rows, cols)."""

    def __init__(self, dataset: Any, grid: Grid) -> None:
        self._grid = grid
        self._nodata = dataset.nodata
        self._offset: tuple[int, int] | None = None
        t, g = dataset.transform, grid.transform
        col = (t.c - g.c) / g.a
        row = (t.f - g.f) / g.e
        same_lattice = (
            dataset.crs == grid.crs
            and math.isclose(t.a, g.a, rel_tol=1e-9)
            and math.isclose(t.e, g.e, rel_tol=1e-9)
            and abs(col - round(col)) < EPSILON
            and abs(row - round(row)) < EPSILON
        )
        if same_lattice:
            self._dataset = dataset
            self._offset = (round(row), round(col))
        else:
            nodata = dataset.nodata if dataset.nodata is not None else grid.nodata
            self._dataset = WarpedVRT(
                dataset,
                crs=grid.crs,
                transform=grid.transform,
                width=grid.width,
                height=grid.height,
                src_nodata=dataset.nodata,
                nodata=nodata,
            )
            self._nodata = nodata

    def read(self, window: Window) -> tuple[npt.NDArray[Any], geo.Mask]:
        height, width = int(window.height), int(window.width)
        data = np.full((self._grid.count, height, width), self._grid.nodata, dtype=self._grid.dtype)
        valid: geo.Mask = np.zeros((height, width), dtype=bool)
        if self._offset is None:
            data = self._dataset.read(window=window)
            return data, geo.valid_mask(data, self._nodata)
        row_off, col_off = self._offset
        # The window in source pixel coordinates, clipped to the source.
        r0 = max(int(window.row_off) - row_off, 0)
        c0 = max(int(window.col_off) - col_off, 0)
        r1 = min(int(window.row_off) + height - row_off, self._dataset.height)
        c1 = min(int(window.col_off) + width - col_off, self._dataset.width)
        if r1 <= r0 or c1 <= c0:
            return data, valid
        part = self._dataset.read(window=Window(c0, r0, c1 - c0, r1 - r0))
        dr, dc = r0 + row_off - int(window.row_off), c0 + col_off - int(window.col_off)
        data[:, dr : dr + part.shape[1], dc : dc + part.shape[2]] = part
        valid[dr : dr + part.shape[1], dc : dc + part.shape[2]] = geo.valid_mask(part, self._nodata)
        return data, valid


def read_mosaic(readers: list[SourceReader], grid: Grid, window: Window) -> tuple[npt.NDArray[Any], geo.Mask]:
    """The mosaic's pixels for ``window``: first valid source wins, nodata elsewhere."""
    height, width = int(window.height), int(window.width)
    out = np.full((grid.count, height, width), grid.nodata, dtype=grid.dtype)
    filled: geo.Mask = np.zeros((height, width), dtype=bool)
    for reader in readers:
        data, valid = reader.read(window)
        take = valid & ~filled
        if take.any():
            out[:, take] = data[:, take]
            filled |= take
        if filled.all():
            break
    return out, filled
