"""What the console shows: PNG quicklooks beside the COGs and the embedding's projection, held to their sources."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
import rasterio

from hastegeo.workloads._run.quicklook import encode_png, quicklook_shape, shrink
from hastegeo.workloads._run.sample_data import SampleScene
from hastegeo.workloads.embedding.run import projection
from hastegeo.workloads.inference.run import CLASS_NODATA, PALETTE

from .conftest import Job, RunJob


def decode_png(data: bytes) -> np.ndarray:
    """A minimal reader for what :func:`encode_png` writes (8-bit RGB/RGBA, filter 0), independent of it."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    offset, chunks = 8, {}
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind = data[offset + 4 : offset + 8]
        body = data[offset + 8 : offset + 8 + length]
        (crc,) = struct.unpack(">I", data[offset + 8 + length : offset + 12 + length])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF
        chunks[kind] = chunks.get(kind, b"") + body
        offset += 12 + length
    width, height, depth, colour, _, _, _ = struct.unpack(">IIBBBBB", chunks[b"IHDR"])
    channels = {2: 3, 6: 4}[colour]
    assert depth == 8
    raw = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), dtype=np.uint8).reshape(height, 1 + width * channels)
    assert (raw[:, 0] == 0).all()
    return raw[:, 1:].reshape(height, width, channels)


@pytest.mark.filterwarnings("ignore::rasterio.errors.NotGeoreferencedWarning")
def test_png_round_trips_and_gdal_reads_it(tmp_path: Path) -> None:
    pixels = np.random.default_rng(3).integers(0, 256, size=(7, 11, 4), dtype=np.uint8)
    data = encode_png(pixels)
    assert np.array_equal(decode_png(data), pixels)
    (tmp_path / "q.png").write_bytes(data)
    with rasterio.open(tmp_path / "q.png") as png:  # an independent decoder
        assert np.array_equal(np.moveaxis(png.read(), 0, -1), pixels)


@pytest.mark.parametrize("bad", [np.zeros((2, 2, 3), dtype=np.uint16), np.zeros((2, 2), dtype=np.uint8)])
def test_png_refuses_what_it_cannot_encode(bad: np.ndarray) -> None:
    with pytest.raises(ValueError, match="expected a non-empty uint8"):
        encode_png(bad)


def test_quicklook_size_never_enlarges() -> None:
    assert quicklook_shape(2048, 1024) == (512, 256)
    assert quicklook_shape(100, 40) == (100, 40)
    assert quicklook_shape(5000, 1) == (512, 1)
    assert shrink(np.zeros((1024, 2048, 3), dtype=np.uint8)).shape == (256, 512, 3)


def test_imagery_preview_png_is_the_preview_with_nodata_transparent(mosaic_job: Job) -> None:
    png = decode_png((mosaic_job.outputs / "preview.png").read_bytes())
    with rasterio.open(mosaic_job.outputs / "preview.tif") as preview:
        rgb = np.moveaxis(preview.read(), 0, -1)
    assert max(png.shape[:2]) <= 512
    expected = shrink(rgb, 512)
    assert np.array_equal(png[..., :3], expected)
    assert np.array_equal(png[..., 3] == 0, (expected == 0).all(axis=-1))
    assert (png[..., 3] == 255).any()


def test_inference_class_png_uses_the_colour_table(inference_job: Job) -> None:
    job = inference_job
    png = decode_png((job.outputs / "classes.png").read_bytes())
    with rasterio.open(job.outputs / "classes.tif") as classes:
        width, height = quicklook_shape(classes.width, classes.height)
        values = classes.read(1, out_shape=(height, width), resampling=rasterio.enums.Resampling.nearest)
        colormap = classes.colormap(1)
    assert png.shape == (height, width, 4)
    for value in np.unique(values):
        expected = (0, 0, 0, 0) if value == CLASS_NODATA else (*PALETTE[value % len(PALETTE)], 255)
        assert colormap[int(value)] == expected
        assert (png[values == value] == expected).all()
    listed = {entry["name"] for entry in job.manifest("inference")["files"]}
    assert "classes.png" in listed


def test_projection_is_the_first_two_principal_components() -> None:
    rng = np.random.default_rng(0)
    matrix = (rng.normal(size=(40, 6)) * [5, 2, 1, 0.5, 0.1, 0.1]).astype(np.float32)
    matrix[3] = np.nan  # a building with no valid pixel is left out
    result = projection(matrix, [f"b{i}" for i in range(40)])
    assert (result["rows"], result["dimensions"]) == (40, 6)
    assert [p["row"] for p in result["points"]] == [i for i in range(40) if i != 3]
    valid = np.delete(matrix, 3, axis=0).astype(np.float64)
    centred = valid - valid.mean(axis=0)
    eigenvalues, eigenvectors = np.linalg.eigh(np.cov(centred, rowvar=False))
    top = eigenvectors[:, ::-1][:, :2]
    expected = centred @ top
    got = np.array([[p["x"], p["y"]] for p in result["points"]])
    for k in range(2):  # same axis up to its sign
        assert np.allclose(np.abs(got[:, k]), np.abs(expected[:, k]), atol=1e-6)
    assert np.allclose(result["explainedVariance"], eigenvalues[::-1][:2] / eigenvalues.sum())
    assert json.dumps(result)  # plain JSON for the browser


def test_projection_of_too_few_rows_is_zeros() -> None:
    result = projection(np.array([[1.0, 2.0]], dtype=np.float32), ["only"])
    assert result["points"] == [{"row": 0, "id": "only", "x": 0.0, "y": 0.0}]
    assert result["explainedVariance"] == [0.0, 0.0]


def test_embedding_writes_its_projection(scene: SampleScene, mosaic_job: Job, run_workload: RunJob) -> None:
    inputs: dict[str, Path | bytes | str] = {
        "imagery.tif": mosaic_job.outputs / "imagery.tif",
        "buildings.geojson": scene.buildings,
    }
    job = run_workload("embedding", inputs, {"dimensions": 8})
    assert job.code == 0, job.stderr
    document = job.json("embedding_projection.json")
    ids = [f["properties"]["id"] for f in job.json("embeddings.geojson")["features"]]
    assert [p["id"] for p in document["points"]] == ids
    assert document["dimensions"] == 8
    assert "embedding_projection.json" in {entry["name"] for entry in job.manifest("embedding")["files"]}
