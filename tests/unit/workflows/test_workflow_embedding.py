"""Embedding: matrix shape and header, ids in order, stability for a seed, the documented format."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from hastegeo.workloads._run.sample_data import SampleScene
from hastegeo.workloads.embedding.format import read_embeddings, write_embeddings

from .conftest import Job, RunJob


@pytest.fixture
def inputs(scene: SampleScene, mosaic_job: Job) -> dict[str, Path | bytes | str]:
    return {"imagery.tif": mosaic_job.outputs / "imagery.tif", "buildings.geojson": scene.buildings}


def test_shape_header_and_ids(scene: SampleScene, inputs: dict[str, Path | bytes | str], run_workload: RunJob) -> None:
    job = run_workload("embedding", inputs, {"dimensions": 16, "seed": 5})
    assert job.code == 0, job.stderr
    buildings = json.loads(scene.buildings.read_text())["features"]
    raw = (job.outputs / "embeddings.bin").read_bytes()
    assert struct.unpack("<4sHHII", raw[:16]) == (b"HEMB", 1, 1, len(buildings), 16)
    assert len(raw) == 16 + len(buildings) * 16 * 4
    header, matrix = read_embeddings(job.outputs / "embeddings.bin")
    assert (header.rows, header.cols) == matrix.shape == (len(buildings), 16)
    plain = np.fromfile(job.outputs / "embeddings.bin", dtype="<f4", offset=16).reshape(header.rows, header.cols)
    assert np.array_equal(plain, matrix, equal_nan=True)
    assert np.isfinite(matrix).all()
    assert (matrix >= 0).all()
    ids = job.json("embeddings.geojson")["features"]
    assert [f["properties"]["id"] for f in ids] == [b["properties"]["id"] for b in buildings]
    assert [f["properties"]["row"] for f in ids] == list(range(len(buildings)))
    assert job.json("embedding_info.json")["matrix"]["headerBytes"] == 16


def test_stable_for_a_seed_and_different_for_another(
    inputs: dict[str, Path | bytes | str], run_workload: RunJob
) -> None:
    first = run_workload("embedding", inputs, {"seed": 1}, name="a")
    second = run_workload("embedding", inputs, {"seed": 1}, name="b")
    third = run_workload("embedding", inputs, {"seed": 2}, name="c")
    assert first.code == second.code == third.code == 0
    assert (first.outputs / "embeddings.bin").read_bytes() == (second.outputs / "embeddings.bin").read_bytes()
    assert (first.outputs / "embeddings.bin").read_bytes() != (third.outputs / "embeddings.bin").read_bytes()
    _, matrix = read_embeddings(first.outputs / "embeddings.bin")
    assert matrix.shape[1] == 32
    assert len({row.tobytes() for row in matrix}) == len(matrix)  # buildings get distinct vectors


def test_footprint_outside_the_raster_gets_a_nan_row(
    scene: SampleScene, inputs: dict[str, Path | bytes | str], run_workload: RunJob
) -> None:
    document = json.loads(scene.buildings.read_text())
    far = {"type": "Feature", "properties": {"id": "far"}, "geometry": {"type": "Polygon", "coordinates": [
        [[2.0, 48.0], [2.001, 48.0], [2.001, 48.001], [2.0, 48.0]]]}}  # fmt: skip
    document["features"].append(far)
    job = run_workload("embedding", {**inputs, "buildings.geojson": json.dumps(document)}, {"dimensions": 4})
    assert job.code == 0, job.stderr
    _, matrix = read_embeddings(job.outputs / "embeddings.bin")
    assert np.isnan(matrix[-1]).all()
    assert np.isfinite(matrix[:-1]).all()
    assert job.json("embeddings.geojson")["features"][-1]["properties"] == {
        "id": "far",
        "row": len(matrix) - 1,
        "pixels": 0,
        "valid": False,
    }


def test_format_round_trip_and_rejection(tmp_path: Path) -> None:
    matrix = np.arange(6, dtype=np.float32).reshape(2, 3)
    write_embeddings(tmp_path / "e.bin", matrix)
    header, loaded = read_embeddings(tmp_path / "e.bin")
    assert (header.version, header.rows, header.cols) == (1, 2, 3)
    assert np.array_equal(loaded, matrix)
    (tmp_path / "bad.bin").write_bytes(b"NOPE" + bytes(12))
    with pytest.raises(ValueError, match="not a version-1"):
        read_embeddings(tmp_path / "bad.bin")


def test_bad_parameters_fail_readably(inputs: dict[str, Path | bytes | str], run_workload: RunJob) -> None:
    job = run_workload("embedding", inputs, {"kernelSize": 4})
    assert job.code == 2
    assert "parameter 'kernelSize': must be odd" in job.stderr
    assert not job.has_manifest("embedding")
