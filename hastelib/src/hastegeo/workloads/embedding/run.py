"""Embedding: a fixed-length feature vector per building footprint, from random convolutional features.

Why random convolutions: with no labels and no pretrained weights available
on compute, a bank of seeded random filters over standardised bands, passed
through a ReLU and mean-pooled under the footprint, gives vectors that
capture local colour and texture, are stable for a seed, and cost one
small convolution per building (Rahimi & Recht's random features idea).

Parameters: ``imagery`` (default ``imagery.tif`` / the only GeoTIFF),
``buildings`` (default ``buildings.geojson``), ``dimensions`` (32),
``kernelSize`` (3, odd), ``seed`` (0); bounds in :class:`hastegeo.workloads.embedding.params.EmbeddingParams`.

Outputs: ``embeddings.bin`` (see :mod:`hastegeo.workloads.embedding.format`),
``embeddings.geojson`` (one feature per row: ``id``, ``row``, ``pixels``,
``valid``), ``embedding_info.json`` (filter settings and band statistics),
``embedding_projection.json`` (each valid row's first two principal
components, small enough for a browser to plot), then the manifest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from numpy.lib.stride_tricks import sliding_window_view
from rasterio.windows import Window

from hastegeo.workloads._run import cog, geo
from hastegeo.workloads._run.harness import ProgressLog, Workdir, WorkloadError, run_main, write_manifest
from hastegeo.workloads._run.params import default_raster, default_vector, read_params
from hastegeo.workloads._run.raster_stats import BandStats
from hastegeo.workloads.embedding.format import HEADER_SIZE, write_embeddings
from hastegeo.workloads.embedding.params import EmbeddingParams

WORKLOAD = "embedding"
MATRIX_FILE = "embeddings.bin"
IDS_GEOJSON = "embeddings.geojson"
INFO_JSON = "embedding_info.json"
PROJECTION_JSON = "embedding_projection.json"
Floats = npt.NDArray[np.float64]


@dataclass(frozen=True)
class FilterBank:
    filters: Floats  # dimensions x bands x k x k
    bias: Floats  # dimensions

    @classmethod
    def random(cls, dimensions: int, bands: int, kernel: int, seed: int) -> FilterBank:
        rng = np.random.default_rng(seed)
        scale = 1.0 / np.sqrt(bands * kernel * kernel)
        filters = rng.normal(0.0, scale, size=(dimensions, bands, kernel, kernel))
        return cls(filters=filters, bias=rng.uniform(-0.5, 0.5, size=dimensions))

    @property
    def pad(self) -> int:
        return int(self.filters.shape[-1]) // 2

    def respond(self, padded: Floats) -> Floats:
        """ReLU responses (rows, cols, dimensions) for a (bands, rows + 2 pad, cols + 2 pad) block."""
        k = self.filters.shape[-1]
        patches = sliding_window_view(padded, (k, k), axis=(1, 2))  # bands, rows, cols, k, k
        response = np.tensordot(patches, self.filters, axes=([0, 3, 4], [1, 2, 3])) + self.bias
        result: Floats = np.maximum(response, 0.0)
        return result


def _standardised_block(dataset: Any, window: Window, pad: int, mean: Floats, std: Floats) -> tuple[Floats, geo.Mask]:
    """``window`` grown by ``pad`` pixels (zeros beyond the raster and at nodata), standardised; plus validity."""
    r0, c0 = int(window.row_off), int(window.col_off)
    r1, c1 = r0 + int(window.height), c0 + int(window.width)
    pr0, pc0 = max(r0 - pad, 0), max(c0 - pad, 0)
    pr1, pc1 = min(r1 + pad, dataset.height), min(c1 + pad, dataset.width)
    data = dataset.read(window=Window(pc0, pr0, pc1 - pc0, pr1 - pr0))
    valid = geo.valid_mask(data, dataset.nodata)
    z = (data.astype(np.float64) - mean[:, None, None]) / std[:, None, None]
    z[:, ~valid] = 0.0
    widths = ((0, 0), (pad - (r0 - pr0), pad - (pr1 - r1)), (pad - (c0 - pc0), pad - (pc1 - c1)))
    inner_valid = valid[r0 - pr0 : r1 - pr0, c0 - pc0 : c1 - pc0]
    return np.pad(z, widths), inner_valid


def embed_feature(
    dataset: Any, feature: geo.Feature, bank: FilterBank, mean: Floats, std: Floats
) -> tuple[Floats | None, int]:
    """Mean-pooled responses over the footprint's valid pixels (processed in bounded sub-blocks), and the count."""
    window = geo.geometry_window(feature.geometry, dataset)
    total = np.zeros(bank.filters.shape[0])
    count = 0
    if window is not None:
        for part in geo.iter_windows(int(window.width), int(window.height), cog.COG_BLOCK):
            sub = Window(window.col_off + part.col_off, window.row_off + part.row_off, part.width, part.height)
            inside = geo.rasterize_window(feature.geometry, dataset, sub)
            if not inside.any():
                continue
            padded, valid = _standardised_block(dataset, sub, bank.pad, mean, std)
            use = inside & valid
            if use.any():
                total += bank.respond(padded)[use].sum(axis=0)
                count += int(use.sum())
    return (total / count if count else None), count


def projection(matrix: npt.NDArray[np.floating[Any]], ids: list[Any]) -> dict[str, Any]:
    """The valid rows projected on their first two principal components (SVD of the centred rows).

    A sign convention (each component's largest loading positive) makes the plot the same on every run.
    Fewer than two valid rows, or a single dimension, give zeros for what cannot be computed.
    """
    rows = np.flatnonzero(np.isfinite(matrix).all(axis=1))
    points = np.zeros((len(rows), 2))
    explained = [0.0, 0.0]
    if len(rows) >= 2:
        centred = matrix[rows].astype(np.float64) - matrix[rows].astype(np.float64).mean(axis=0)
        _, singular, components = np.linalg.svd(centred, full_matrices=False)
        k = min(2, components.shape[0])
        signs = np.sign(components[np.arange(k), np.abs(components[:k]).argmax(axis=1)])
        signs[signs == 0] = 1.0
        points[:, :k] = centred @ (components[:k].T * signs)
        total = float((singular**2).sum())
        if total > 0:
            explained[:k] = [float(v) for v in (singular[:k] ** 2) / total]
    return {
        "method": "pca",
        "rows": int(matrix.shape[0]),
        "dimensions": int(matrix.shape[1]),
        "explainedVariance": explained,
        "points": [
            {"row": int(row), "id": ids[row], "x": float(x), "y": float(y)}
            for row, (x, y) in zip(rows, points, strict=True)
        ],
    }


def _band_statistics(dataset: Any) -> tuple[Floats, Floats]:
    stats = BandStats(dataset.count)
    for window in geo.iter_windows(dataset.width, dataset.height, cog.COG_BLOCK):
        data = dataset.read(window=window)
        stats.add(data, geo.valid_mask(data, dataset.nodata))
    if stats.count == 0:
        raise WorkloadError("the imagery has no valid pixel")
    std = np.where(stats.std > 0, stats.std, 1.0)
    return stats.mean, std


def run(workdir: Workdir, params: dict[str, Any], progress: ProgressLog) -> None:
    settings = read_params(EmbeddingParams, params, progress)
    dimensions, kernel, seed = settings.dimensions, settings.kernel_size, settings.seed
    raster_path = default_raster(workdir, settings.imagery)
    buildings_path = default_vector(workdir, settings.buildings, "buildings", "buildings.geojson")
    with geo.gdal_env(), geo.open_raster(raster_path) as dataset:
        features = geo.read_features(buildings_path, dataset.crs)
        progress.step(f"{len(features)} footprint(s) from {buildings_path.name}; imagery {raster_path.name}")
        mean, std = _band_statistics(dataset)
        bank = FilterBank.random(dimensions, dataset.count, kernel, seed)
        matrix = np.full((len(features), dimensions), np.nan, dtype=np.float32)
        rows = []
        for row, feature in enumerate(features):
            vector, pixels = embed_feature(dataset, feature, bank, mean, std)
            if vector is not None:
                matrix[row] = vector
            wgs84 = geo.to_crs(feature.geometry, dataset.crs, geo.WGS84)
            rows.append(
                geo.geojson_feature(wgs84, {"id": feature.id, "row": row, "pixels": pixels, "valid": bool(pixels)})
            )
    valid_rows = int(np.isfinite(matrix).all(axis=1).sum())
    progress.step(f"embedded {valid_rows} of {len(features)} building(s) into {dimensions} dimensions")
    write_embeddings(workdir.output_path(MATRIX_FILE), matrix)
    geo.write_json(workdir.output_path(IDS_GEOJSON), geo.feature_collection(rows), compact=True)
    info = {
        "method": "random-convolution-relu-mean-pool",
        "dimensions": dimensions,
        "kernelSize": kernel,
        "seed": seed,
        "bandMean": mean.tolist(),
        "bandStd": std.tolist(),
        "matrix": {"file": MATRIX_FILE, "headerBytes": HEADER_SIZE, "dtype": "<f4", "rows": len(features)},
    }
    geo.write_json(workdir.output_path(INFO_JSON), info)
    geo.write_json(workdir.output_path(PROJECTION_JSON), projection(matrix, [f.id for f in features]))
    write_manifest(workdir, WORKLOAD, extra={"summary": {"buildings": len(features), "embedded": valid_rows}})


def main() -> int:
    return run_main(WORKLOAD, run)
