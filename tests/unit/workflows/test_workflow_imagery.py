"""Imagery workload on generated rasters: mosaic, clip, statistics, COG layout, outline, failures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import rasterio
from affine import Affine
from pyproj import CRS, Transformer
from shapely.geometry import box, shape

from hastegeo.pipeline.progress import parse_line
from hastegeo.utils.files import sha256_file
from hastegeo.workloads._run.cog import inspect_cog
from hastegeo.workloads._run.geo import WGS84, to_crs
from hastegeo.workloads._run.sample_data import SampleScene

from .conftest import Job, RunJob

OUTPUTS = {"imagery.tif", "preview.tif", "preview.png", "band_stats.json", "valid_outline.geojson"}


def _read_valid(path: Path) -> tuple[np.ndarray, np.ndarray]:
    with rasterio.open(path) as dataset:
        data = dataset.read()
        valid = (data != dataset.nodata).all(axis=0)
    return data, valid


def test_mosaic_copies_both_tiles_pixel_for_pixel(scene: SampleScene, mosaic_job: Job) -> None:
    with rasterio.open(mosaic_job.outputs / "imagery.tif") as out:
        assert out.crs == CRS.from_epsg(32633)
        assert out.transform == scene.transform
        assert (out.width, out.height, out.count) == (512, 512, 3)
        mosaic = out.read()
    for index, path in enumerate(scene.rasters):
        with rasterio.open(path) as tile:
            expected = tile.read()
        assert np.array_equal(mosaic[:, :, index * 256 : (index + 1) * 256], expected)


def test_band_statistics_match_numpy_on_the_valid_pixels(mosaic_job: Job) -> None:
    data, valid = _read_valid(mosaic_job.outputs / "imagery.tif")
    stats = mosaic_job.json("band_stats.json")
    assert stats["validPixels"] == int(valid.sum())
    assert 0 < stats["validPixels"] < valid.size  # the nodata margins really are excluded
    for band, entry in enumerate(stats["bands"]):
        pixels = data[band][valid].astype(np.float64)
        assert entry["mean"] == pytest.approx(pixels.mean(), rel=1e-12)
        assert entry["std"] == pytest.approx(pixels.std(), rel=1e-10)
        assert (entry["min"], entry["max"]) == (pixels.min(), pixels.max())


def test_outputs_are_valid_cogs(mosaic_job: Job) -> None:
    for name in ("imagery.tif", "preview.tif"):
        report = inspect_cog(mosaic_job.outputs / name)
        assert report.valid, (name, report.problems)
        assert report.tiled
        assert report.block_shape == (256, 256)
    assert inspect_cog(mosaic_job.outputs / "imagery.tif").overview_count >= 1


def test_preview_is_8bit_rgb_with_nodata_zero(mosaic_job: Job) -> None:
    with rasterio.open(mosaic_job.outputs / "preview.tif") as preview:
        assert preview.count == 3
        assert preview.dtypes == ("uint8",) * 3
        assert max(preview.width, preview.height) == 256
        data = preview.read()
        assert preview.nodata == 0
    assert (data == 0).all(axis=0).any()
    assert (data > 0).all(axis=0).any()


def test_outline_covers_exactly_the_valid_pixels(scene: SampleScene, mosaic_job: Job) -> None:
    _, valid = _read_valid(mosaic_job.outputs / "imagery.tif")
    document = mosaic_job.json("valid_outline.geojson")
    outline = shape(document["features"][0]["geometry"])
    projected = to_crs(outline, WGS84, CRS.from_epsg(32633))
    assert projected.area == pytest.approx(valid.sum() * 1.0, rel=1e-6)  # 1 m² pixels
    # a valid pixel centre is inside, a nodata one outside
    rows, cols = np.nonzero(valid)
    x, y = scene.transform @ (cols[0] + 0.5, rows[0] + 0.5)
    assert projected.contains(box(x - 0.1, y - 0.1, x + 0.1, y + 0.1))
    x, y = scene.transform @ (0.5, 0.5)
    assert not projected.contains(box(x - 0.1, y - 0.1, x + 0.1, y + 0.1))


def test_manifest_lists_every_output_with_its_hash(mosaic_job: Job) -> None:
    manifest = mosaic_job.manifest("imagery")
    names = {entry["name"] for entry in manifest["files"]}
    assert names == OUTPUTS
    for entry in manifest["files"]:
        path = mosaic_job.outputs / entry["name"]
        assert entry["size"] == path.stat().st_size
        assert entry["sha256"] == sha256_file(path)
    assert not [p for p in mosaic_job.root.iterdir() if p.name.startswith("scratch-")]
    assert any("mosaic grid 512x512" in line for line in mosaic_job.progress("imagery"))


def test_clip_to_wgs84_bbox(scene: SampleScene, run_workload: RunJob) -> None:
    to_wgs84 = Transformer.from_crs(32633, 4326, always_xy=True)
    west, south = to_wgs84.transform(500_100.0, 4_999_600.0)
    east, north = to_wgs84.transform(500_400.0, 4_999_900.0)
    bbox = [west, south, east, north]
    job = run_workload("imagery", {p.name: p for p in scene.rasters}, {"bbox": bbox})
    assert job.code == 0, job.stderr
    with rasterio.open(job.outputs / "imagery.tif") as out:
        assert out.crs == CRS.from_epsg(32633)
        left, bottom, right, top = out.bounds
        data = out.read()
    expected = Transformer.from_crs(4326, 32633, always_xy=True).transform_bounds(
        west, south, east, north, densify_pts=64
    )
    # snapped outward to whole pixels: contains the bbox envelope, by less than one pixel
    assert left <= expected[0] < left + 1
    assert right - 1 < expected[2] <= right
    assert bottom <= expected[1] < bottom + 1
    assert top - 1 < expected[3] <= top
    assert (left, top) == (500_100.0, 4_999_900.0) or abs(left - 500_100) <= 1
    with rasterio.open(scene.rasters[0]) as tile:
        col0, row0 = (int(v) for v in ~tile.transform @ (left, top))
        assert np.array_equal(data[:, :, : 256 - col0], tile.read()[:, row0 : row0 + data.shape[1], col0:])
    assert inspect_cog(job.outputs / "imagery.tif").valid


def test_reprojects_a_source_in_another_crs(scene: SampleScene, run_workload: RunJob, tmp_path: Path) -> None:
    """The right tile re-expressed in UTM 34N (same pixels, other CRS) lands where the original was."""
    with rasterio.open(scene.rasters[1]) as tile:
        profile, data = tile.profile, tile.read()
        left, _bottom, _right, top = tile.bounds
    to_34 = Transformer.from_crs(32633, 32634, always_xy=True)
    x0, y0 = to_34.transform(left, top)
    profile.update(crs=CRS.from_epsg(32634), transform=Affine(1.0, 0, x0, 0, -1.0, y0))
    other = tmp_path / "right_34n.tif"
    with rasterio.open(other, "w", **profile) as out:
        out.write(data)
    sources = [scene.rasters[0].name, other.name]  # the first source fixes the output CRS and grid
    job = run_workload("imagery", {scene.rasters[0].name: scene.rasters[0], other.name: other}, {"sources": sources})
    assert job.code == 0, job.stderr
    with rasterio.open(job.outputs / "imagery.tif") as out:
        assert out.crs == CRS.from_epsg(32633)
        assert out.bounds.left == 500_000.0
        assert out.width >= 512
        assert (out.read(1)[:, 300:400] > 0).mean() > 0.9  # the reprojected tile is there


def test_bbox_outside_the_image_fails_readably(scene: SampleScene, run_workload: RunJob) -> None:
    job = run_workload("imagery", {p.name: p for p in scene.rasters}, {"bbox": [2.0, 48.0, 2.1, 48.1]})
    assert job.code == 2
    assert job.stderr.strip().splitlines()[-1].startswith("error: bbox does not overlap the imagery")
    assert not job.has_manifest("imagery")
    assert "imagery failed: bbox does not overlap" in job.progress("imagery")[-1]


def test_non_raster_input_fails_readably(run_workload: RunJob) -> None:
    job = run_workload("imagery", {"notes.tif": b"this is not a GeoTIFF"}, {"sources": ["notes.tif"]})
    assert job.code == 2
    assert "notes.tif is not a readable raster" in job.stderr
    assert not job.has_manifest("imagery")


def test_bad_parameters_fail_readably(scene: SampleScene, run_workload: RunJob) -> None:
    job = run_workload("imagery", {p.name: p for p in scene.rasters}, {"bbox": [1, 2, 3]})
    assert job.code == 2
    assert "parameter 'bbox': List should have at least 4 items" in job.stderr
    job = run_workload("imagery", {}, {"sources": ["../../etc/passwd"]}, name="escape")
    assert job.code == 2
    assert "parameter 'sources[0]': must be a relative path without '..'" in job.stderr
    assert not job.has_manifest("imagery")


def test_runs_as_a_real_subprocess(scene: SampleScene, tmp_path: Path) -> None:
    root = tmp_path / "job"
    (root / "inputs").mkdir(parents=True)
    for path in scene.rasters:
        (root / "inputs" / path.name).write_bytes(path.read_bytes())
    (root / "params.json").write_text(json.dumps({"previewMaxSize": 128, "typoParam": 1}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("HASTE_")}
    result = subprocess.run(
        [sys.executable, "-m", "hastegeo.workloads.imagery"],
        env={**env, "HASTE_JOB_WORKDIR": str(root)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    manifest = json.loads((root / "outputs" / "imagery_manifest.json").read_text())
    assert {f["name"] for f in manifest["files"]} == OUTPUTS
    log = (root / "logs" / "imagery_progress.log").read_text().splitlines()
    assert any("ignoring unknown parameter(s): typoParam" in line for line in log)
    assert all(parse_line(line).at is not None for line in log)  # every line carries its UTC time

    bad = subprocess.run(
        [sys.executable, "-m", "hastegeo.workloads.imagery"],
        env={**env, "HASTE_JOB_WORKDIR": str(tmp_path / "empty")},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines()[-1] == "error: no GeoTIFF found in inputs/ and no 'sources' given"
