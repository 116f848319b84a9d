"""Inference: per-building fractions against a hand-computed case, the class COG, and foreign model files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import rasterio
from affine import Affine
from pyproj import Transformer
from shapely.geometry import box, mapping

from hastegeo.workloads._run.cog import inspect_cog
from hastegeo.workloads._run.sample_data import SampleScene

from .conftest import Job, RunJob

ORIGIN_X, ORIGIN_Y = 600_000.0, 4_000_000.0  # UTM 33N, 10 m pixels
NODATA = -9999.0

# Applies "a" where the value is > 0 and "b" where it is < 0: logits = [x, -x].
HAND_MODEL = {
    "kind": "haste-pixel-classifier",
    "formatVersion": 1,
    "workload": "training",
    "algorithm": "multinomial-logistic-regression",
    "classes": ["a", "b"],
    "bands": 1,
    "nodata": NODATA,
    "featureMean": [0.0],
    "featureStd": [1.0],
    "weights": [[1.0, -1.0]],
    "bias": [0.0, 0.0],
    "training": {},
}


def _hand_raster(path: Path) -> None:
    """8 x 8, one band: +1 in columns 0-3, -1 in columns 4-7, nodata at (row 0, col 0)."""
    data = np.where(np.arange(8) < 4, 1.0, -1.0)[np.newaxis, np.newaxis, :].repeat(8, axis=1).astype("float32")
    data[0, 0, 0] = NODATA
    profile = {
        "driver": "GTiff", "width": 8, "height": 8, "count": 1, "dtype": "float32", "crs": "EPSG:32633",
        "transform": Affine(10.0, 0, ORIGIN_X, 0, -10.0, ORIGIN_Y), "nodata": NODATA,
    }  # fmt: skip
    with rasterio.open(path, "w", **profile) as out:
        out.write(data)


def _cells(row0: int, col0: int, row1: int, col1: int) -> object:
    """A polygon on pixel edges covering rows row0..row1-1 and cols col0..col1-1."""
    return box(ORIGIN_X + 10 * col0, ORIGIN_Y - 10 * row1, ORIGIN_X + 10 * col1, ORIGIN_Y - 10 * row0)


def _footprints() -> str:
    """Three footprints in WGS84 (RFC 7946): two over the raster, one far outside."""
    to_wgs84 = Transformer.from_crs(32633, 4326, always_xy=True)
    features = []
    for ident, polygon in [
        ("first", _cells(0, 0, 4, 6)),
        ("second", _cells(4, 2, 8, 6)),
        ("outside", _cells(100, 100, 104, 104)),
    ]:
        ring = [list(to_wgs84.transform(x, y)) for x, y in polygon.exterior.coords]  # type: ignore[attr-defined]
        features.append(
            {
                "type": "Feature",
                "properties": {"id": ident},
                "geometry": mapping(box(0, 0, 1, 1)) | {"coordinates": [ring]},
            }
        )
    return json.dumps({"type": "FeatureCollection", "features": features})


def test_building_fractions_match_a_hand_computed_case(run_workload: RunJob, tmp_path: Path) -> None:
    raster = tmp_path / "hand.tif"
    _hand_raster(raster)
    inputs: dict[str, Path | bytes | str] = {
        "imagery.tif": raster,
        "model.json": json.dumps(HAND_MODEL),
        "buildings.geojson": _footprints(),
    }
    job = run_workload("inference", inputs)
    assert job.code == 0, job.stderr
    results = {f["properties"]["id"]: f["properties"] for f in job.json("building_classes.geojson")["features"]}
    # first: rows 0-3 x cols 0-5 = 24 pixels, one is nodata; "a" in cols 0-3 (16 - 1), "b" in cols 4-5 (8)
    assert results["first"]["pixels"] == 24
    assert results["first"]["classifiedPixels"] == 23
    assert results["first"]["fractions"] == {"a": pytest.approx(15 / 23), "b": pytest.approx(8 / 23)}
    assert results["first"]["dominantClass"] == "a"
    # second: rows 4-7 x cols 2-5 = 16 pixels, half each side
    assert results["second"]["fractions"] == {"a": 0.5, "b": 0.5}
    assert results["outside"] == {
        "id": "outside", "pixels": 0, "classifiedPixels": 0, "fractions": None, "dominantClass": None,
    }  # fmt: skip
    with rasterio.open(job.outputs / "classes.tif") as classes:
        values = classes.read(1)
        assert json.loads(classes.tags()["CLASS_NAMES"]) == ["a", "b"]
        assert classes.nodata == 255
    expected = np.where(np.arange(8) < 4, 0, 1)[np.newaxis, :].repeat(8, axis=0)
    expected[0, 0] = 255
    assert np.array_equal(values, expected)
    assert job.json("class_summary.json")["pixelsPerClass"] == {"a": 31, "b": 32}


def test_inference_on_the_scene_writes_a_class_cog(scene: SampleScene, inference_job: Job) -> None:
    job = inference_job
    assert inspect_cog(job.outputs / "classes.tif").valid
    buildings = job.json("building_classes.geojson")["features"]
    assert len(buildings) == len(json.loads(scene.buildings.read_text())["features"]) > 5
    building_share = np.mean([b["properties"]["fractions"]["building"] for b in buildings])
    assert building_share > 0.8  # footprints are mostly classified as buildings
    assert {f["name"] for f in job.manifest("inference")["files"]} == {
        "classes.tif", "classes.png", "class_summary.json", "building_classes.geojson",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (
            json.dumps({"kind": "haste-embedding", "dimensions": 32}),
            "is not a haste-pixel-classifier (kind='haste-embedding')",
        ),
        (json.dumps({"method": "random-convolution-relu-mean-pool"}), "is not a haste-pixel-classifier (kind=None)"),
        (b"PK\x03\x04 an npz from elsewhere", "is not a haste-pixel-classifier (not JSON)"),
        (json.dumps(HAND_MODEL | {"formatVersion": 2}), "has format 2"),
        (json.dumps(HAND_MODEL | {"weights": [[1.0]]}), "inconsistent array shapes"),
    ],
)
def test_a_model_from_elsewhere_fails_readably(
    content: str | bytes, reason: str, run_workload: RunJob, tmp_path: Path
) -> None:
    raster = tmp_path / "hand.tif"
    _hand_raster(raster)
    job = run_workload("inference", {"imagery.tif": raster, "model.json": content})
    assert job.code == 2
    assert reason in job.stderr.strip().splitlines()[-1]
    assert not job.has_manifest("inference")
    assert not (job.outputs / "classes.tif").exists()


def test_band_count_mismatch_fails_readably(mosaic_job: Job, run_workload: RunJob) -> None:
    job = run_workload(
        "inference", {"imagery.tif": mosaic_job.outputs / "imagery.tif", "model.json": json.dumps(HAND_MODEL)}
    )
    assert job.code == 2
    assert "the model expects 1 band(s), imagery.tif has 3" in job.stderr
