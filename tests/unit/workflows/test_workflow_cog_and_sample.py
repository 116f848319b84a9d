"""The COG checker tells a COG from a plain GeoTIFF; the sample scene has the promised properties."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import rasterio
from affine import Affine
from shapely.geometry import shape

from hastegeo.workloads._run.cog import inspect_cog, write_cog
from hastegeo.workloads._run.sample_data import SampleScene, generate


def _plain_tiff(path: Path, tiled: bool) -> None:
    profile = {
        "driver": "GTiff", "width": 600, "height": 600, "count": 1, "dtype": "uint8", "crs": "EPSG:32633",
        "transform": Affine(1, 0, 500_000, 0, -1, 5_000_000), "tiled": tiled,
    }  # fmt: skip
    if tiled:
        profile.update(blockxsize=256, blockysize=256)
    with rasterio.open(path, "w", **profile) as out:
        out.write(np.arange(600 * 600, dtype=np.uint32).reshape(1, 600, 600).astype(np.uint8))


def test_checker_rejects_plain_geotiffs_and_accepts_the_cog_copy(tmp_path: Path) -> None:
    striped, tiled, cog = tmp_path / "striped.tif", tmp_path / "tiled.tif", tmp_path / "cog.tif"
    _plain_tiff(striped, tiled=False)
    _plain_tiff(tiled, tiled=True)
    assert any("not tiled" in p for p in inspect_cog(striped).problems)
    problems = inspect_cog(tiled).problems
    assert "no overviews" in problems
    assert any("layout" in p for p in problems)
    with rasterio.open(tiled, "r+") as dataset:  # overviews appended after the data: not the COG order
        dataset.build_overviews([2])
    assert any("IFDs are not" in p or "image data starts" in p for p in inspect_cog(tiled).problems)
    write_cog(striped, cog)
    report = inspect_cog(cog)
    assert report.valid, report.problems
    assert report.overview_count == 2
    assert report.ifd_offsets == sorted(report.ifd_offsets)
    assert not list(tmp_path.glob("*.tmp"))


def test_sample_scene_properties(scene: SampleScene) -> None:
    with rasterio.open(scene.rasters[0]) as left, rasterio.open(scene.rasters[1]) as right:
        assert left.crs == right.crs
        assert left.crs.is_projected
        assert left.crs.to_epsg() == 32633
        assert left.count == right.count == 3
        assert left.nodata == right.nodata == 0
        assert left.bounds.right == right.bounds.left
        assert left.bounds.top == right.bounds.top
        for dataset in (left, right):
            valid = (dataset.read() != 0).all(axis=0)
            assert 0.8 < valid.mean() < 0.98  # nodata margins
    labels = json.loads(scene.labels.read_text())["features"]
    classes = {f["properties"]["class"] for f in labels}
    assert classes == set(scene.classes)
    assert len(classes) >= 2
    buildings = json.loads(scene.buildings.read_text())["features"]
    assert len(buildings) > 5
    assert all(shape(b["geometry"]).is_valid for b in buildings)
    lon, lat = shape(buildings[0]["geometry"]).centroid.coords[0]
    assert 14 < lon < 16
    assert 44 < lat < 46


def test_sample_scene_is_deterministic(tmp_path: Path) -> None:
    first, second = generate(tmp_path / "a", size=256, seed=3), generate(tmp_path / "b", size=256, seed=3)
    other = generate(tmp_path / "c", size=256, seed=4)
    for a, b, c in zip(first.rasters, second.rasters, other.rasters, strict=True):
        with rasterio.open(a) as da, rasterio.open(b) as db, rasterio.open(c) as dc:
            assert np.array_equal(da.read(), db.read())
            assert not np.array_equal(da.read(), dc.read())
    assert first.labels.read_text() == second.labels.read_text()
