"""A synthetic scene to run every workload on without downloading anything.

:func:`generate` writes two adjacent 3-band GeoTIFFs (UTM zone 33N, 1 m
pixels, nodata margins of different shapes so the mosaic's outline is not a
rectangle), labelled polygons of four classes and building footprints. Land
cover follows a smooth random field (water / vegetation / bare) with
rectangular buildings on top; each class has its own mean reflectance and
every pixel gets Gaussian noise, so the classes are separable but a
classifier makes some mistakes. The rasters are written window by window,
so a 4096 x 4096 scene needs no more memory than a small one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import numpy.typing as npt
import rasterio
from affine import Affine
from pyproj import CRS
from shapely.geometry import box
from shapely.geometry.base import BaseGeometry

from hastegeo.workloads._run import geo

CLASSES = ("water", "vegetation", "bare", "building")
BAND_MEANS = np.array([[220.0, 420.0, 720.0], [320.0, 820.0, 330.0], [900.0, 780.0, 600.0], [1500.0, 1380.0, 1450.0]])
NOISE_STD = 140.0
NODATA = 0
EPSG = 32633
ORIGIN = (500_000.0, 5_000_000.0)
RESOLUTION = 1.0
CELL = 64
LABELS_PER_CLASS = 6
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class SampleScene:
    """Paths and facts of a generated scene (pixel coordinates are those of the full scene)."""

    folder: Path
    rasters: tuple[Path, Path]
    labels: Path
    buildings: Path
    classes: tuple[str, ...]
    size: int
    crs: CRS
    transform: Affine


@dataclass(frozen=True)
class _Layout:
    size: int
    phases: tuple[float, float, float]
    buildings: tuple[tuple[int, int, int, int], ...]  # row0, col0, row1, col1 (exclusive)

    @property
    def margin(self) -> int:
        return max(4, self.size // 32)

    def valid(self, rows: IntArray, cols: IntArray) -> npt.NDArray[np.bool_]:
        """Left tile: nodata along its top and left edges and a cut bottom-left corner; right tile: bottom/right."""
        m, n, half = self.margin, self.size, self.size // 2
        left = cols < half
        left_ok = (cols >= m) & (rows >= m) & ((n - rows) + cols >= 4 * m)
        right_ok = (cols < n - m) & (rows < n - m)
        result: npt.NDArray[np.bool_] = np.where(left, left_ok, right_ok)
        return result

    def background(self, rows: IntArray, cols: IntArray) -> IntArray:
        x, y, n = cols + 0.5, rows + 0.5, float(self.size)
        p0, p1, p2 = self.phases
        field = (
            np.sin(2 * math.pi * x / (0.9 * n) + p0)
            + np.sin(2 * math.pi * y / (0.7 * n) + p1)
            + 0.6 * np.sin(2 * math.pi * (x - y) / (0.5 * n) + p2)
        )
        classes: IntArray = np.where(field < -0.9, 0, np.where(field < 0.5, 1, 2)).astype(np.int64)
        return classes

    @cached_property
    def boxes(self) -> IntArray:
        return np.asarray(self.buildings, dtype=np.int64).reshape(-1, 4)

    def classes(self, row0: int, col0: int, height: int, width: int) -> IntArray:
        rows, cols = np.mgrid[row0 : row0 + height, col0 : col0 + width]
        result = self.background(rows, cols)
        if not self.buildings:
            return result
        boxes = self.boxes
        hits = (
            (boxes[:, 2] > row0) & (boxes[:, 0] < row0 + height) & (boxes[:, 3] > col0) & (boxes[:, 1] < col0 + width)
        )
        for r0, c0, r1, c1 in boxes[hits].tolist():
            result[max(r0 - row0, 0) : r1 - row0, max(c0 - col0, 0) : c1 - col0] = 3
        return result


def _place_buildings(size: int, rng: np.random.Generator, layout: _Layout) -> tuple[tuple[int, int, int, int], ...]:
    """At most one building per 64-pixel cell, so they never overlap; none on water or nodata."""
    side = max(6, min(size // 40, 24))
    placed = []
    for cell_row in range(0, size - CELL + 1, CELL):
        for cell_col in range(0, size - CELL + 1, CELL):
            if rng.random() > 0.6:
                continue
            height, width = (int(v) for v in rng.integers(side, 2 * side, size=2))
            r0 = cell_row + int(rng.integers(2, CELL - height - 1))
            c0 = cell_col + int(rng.integers(2, CELL - width - 1))
            rows, cols = np.mgrid[r0 : r0 + height, c0 : c0 + width]
            if not layout.valid(rows, cols).all() or (layout.background(rows, cols) == 0).any():
                continue
            if c0 < size // 2 <= c0 + width:
                continue  # keep footprints inside one tile: simpler to reason about, not required
            placed.append((r0, c0, r0 + height, c0 + width))
    return tuple(placed)


def _label_boxes(layout: _Layout, rng: np.random.Generator) -> list[tuple[str, tuple[int, int, int, int]]]:
    """Homogeneous rectangles for each background class, plus every other building as 'building'."""
    side = max(8, min(layout.size // 24, 32))
    labels: list[tuple[str, tuple[int, int, int, int]]] = []
    for class_index in range(3):
        found = 0
        for _ in range(4000):
            r0, c0 = (int(v) for v in rng.integers(0, layout.size - side, size=2))
            window = layout.classes(r0, c0, side, side)
            rows, cols = np.mgrid[r0 : r0 + side, c0 : c0 + side]
            if (window == class_index).all() and layout.valid(rows, cols).all():
                labels.append((CLASSES[class_index], (r0, c0, r0 + side, c0 + side)))
                found += 1
                if found == LABELS_PER_CLASS:
                    break
    for footprint in layout.buildings[::2][: 2 * LABELS_PER_CLASS]:
        labels.append(("building", footprint))
    return labels


def _pixel_box(transform: Affine, bounds: tuple[int, int, int, int]) -> BaseGeometry:
    r0, c0, r1, c1 = bounds
    left, top = transform @ (c0, r0)
    right, bottom = transform @ (c1, r1)
    return box(left, bottom, right, top)


def _write_vectors(
    path: Path, items: list[tuple[dict[str, str], tuple[int, int, int, int]]], transform: Affine
) -> None:
    crs = CRS.from_epsg(EPSG)
    features = [
        geo.geojson_feature(geo.to_crs(_pixel_box(transform, bounds), crs, geo.WGS84), properties)
        for properties, bounds in items
    ]
    geo.write_json(path, geo.feature_collection(features), compact=True)


def _write_tile(path: Path, layout: _Layout, col0: int, width: int, tile: int, seed: int, transform: Affine) -> None:
    size = layout.size
    profile = {
        "driver": "GTiff",
        "width": width,
        "height": size,
        "count": 3,
        "dtype": "uint16",
        "crs": CRS.from_epsg(EPSG),
        "transform": transform @ Affine.translation(col0, 0),
        "nodata": NODATA,
        "tiled": True,
        "blockxsize": 256,
        "blockysize": 256,
    }
    with rasterio.open(path, "w", **profile) as dataset:
        for window in geo.iter_windows(width, size):
            row, col = int(window.row_off), int(window.col_off)
            h, w = int(window.height), int(window.width)
            rng = np.random.default_rng([seed, tile, row, col])
            classes = layout.classes(row, col0 + col, h, w)
            values = BAND_MEANS[classes].transpose(2, 0, 1) + rng.normal(0.0, NOISE_STD, size=(3, h, w))
            data = np.clip(np.rint(values), 1, 65535).astype(np.uint16)
            rows, cols = np.mgrid[row : row + h, col0 + col : col0 + col + w]
            data[:, ~layout.valid(rows, cols)] = NODATA
            dataset.write(data, window=window)


def generate(folder: Path, size: int = 512, seed: int = 0) -> SampleScene:
    """Write ``scene_left.tif``, ``scene_right.tif``, ``labels.geojson`` and ``buildings.geojson`` into ``folder``.

    ``size`` is the full scene's width and height in pixels (a multiple of
    128, at least 256); the same ``seed`` gives byte-identical rasters.
    """
    if size < 256 or size % 128:
        raise ValueError("size must be a multiple of 128 and at least 256")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    phases = tuple(float(p) for p in rng.uniform(0, 2 * math.pi, size=3))
    layout = _Layout(size, (phases[0], phases[1], phases[2]), ())
    layout = _Layout(size, layout.phases, _place_buildings(size, rng, layout))
    transform = Affine(RESOLUTION, 0, ORIGIN[0], 0, -RESOLUTION, ORIGIN[1])
    half = size // 2
    left, right = folder / "scene_left.tif", folder / "scene_right.tif"
    with geo.gdal_env():
        _write_tile(left, layout, 0, half, 0, seed, transform)
        _write_tile(right, layout, half, size - half, 1, seed, transform)
    labels, buildings = folder / "labels.geojson", folder / "buildings.geojson"
    _write_vectors(labels, [({"class": name}, bounds) for name, bounds in _label_boxes(layout, rng)], transform)
    _write_vectors(buildings, [({"id": f"b{i:05d}"}, bounds) for i, bounds in enumerate(layout.buildings)], transform)
    return SampleScene(
        folder=folder,
        rasters=(left, right),
        labels=labels,
        buildings=buildings,
        classes=CLASSES,
        size=size,
        crs=CRS.from_epsg(EPSG),
        transform=transform,
    )


def main() -> None:
    """``python -m hastegeo.workloads._run.sample_data FOLDER [SIZE] [SEED]`` (the CLI wraps :func:`generate`)."""
    import sys

    args = sys.argv[1:]
    if not args:
        raise SystemExit("usage: python -m hastegeo.workloads._run.sample_data FOLDER [SIZE] [SEED]")
    scene = generate(Path(args[0]), int(args[1]) if len(args) > 1 else 512, int(args[2]) if len(args) > 2 else 0)
    for path in (*scene.rasters, scene.labels, scene.buildings):
        print(path)


if __name__ == "__main__":
    main()
