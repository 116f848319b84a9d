"""Inference: apply a trained pixel classifier window by window; summarise classes under each building.

Parameters:

- ``model``: model file under inputs/ (default ``model.json``); must be a
  ``haste-pixel-classifier`` written by the training workload.
- ``imagery``: raster under inputs/ (default ``imagery.tif``, else the only GeoTIFF).
- ``buildings``: footprints GeoJSON under inputs/ (default ``buildings.geojson``
  if present; without footprints only the class raster is written).

Outputs: ``classes.tif`` (uint8 COG: class index, 255 = nodata, class names
in the ``CLASS_NAMES`` tag, a JSON array: a name may hold a comma), ``classes.png`` (its quicklook in the colour
table's colours, at most 512 pixels a side), ``class_summary.json`` (pixels per class),
``building_classes.geojson`` (per footprint: the fraction of its classified
pixels in each class; a pixel belongs to a footprint when its centre is
inside), then the manifest.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import rasterio

from hastegeo.workloads._run import cog, geo, quicklook
from hastegeo.workloads._run.classifier import PixelClassifier, load_model
from hastegeo.workloads._run.harness import ProgressLog, Workdir, WorkloadError, iter_files, run_main, write_manifest
from hastegeo.workloads._run.params import default_raster, default_vector, input_file, read_params
from hastegeo.workloads.inference.params import InferenceParams

WORKLOAD = "inference"
CLASS_COG = "classes.tif"
CLASS_PNG = "classes.png"
SUMMARY_JSON = "class_summary.json"
BUILDINGS_GEOJSON = "building_classes.geojson"
CLASS_NODATA = 255
PALETTE = [(31, 119, 180), (44, 160, 44), (214, 39, 40), (255, 127, 14), (148, 103, 189), (140, 86, 75)]


def classify_raster(model: PixelClassifier, dataset: Any, target: Path) -> np.ndarray[Any, np.dtype[np.int64]]:
    """Write class indices for every window of ``dataset`` into a tiled GeoTIFF; return pixel counts per class."""
    counts = np.zeros(len(model.classes), dtype=np.int64)
    profile = cog.scratch_profile(
        dataset.width, dataset.height, 1, "uint8", dataset.crs, dataset.transform, CLASS_NODATA
    )
    with rasterio.open(target, "w", **profile) as out:
        for window in geo.iter_windows(dataset.width, dataset.height, cog.COG_BLOCK):
            data = dataset.read(window=window)
            valid = geo.valid_mask(data, dataset.nodata)
            classes = np.full(valid.shape, CLASS_NODATA, dtype=np.uint8)
            if valid.any():
                predicted = model.predict(data[:, valid].T)
                classes[valid] = predicted.astype(np.uint8)
                counts += np.bincount(predicted, minlength=len(model.classes))
            out.write(classes[np.newaxis], window=window)
        out.update_tags(CLASS_NAMES=json.dumps(list(model.classes)))
        out.write_colormap(
            1, {i: (*PALETTE[i % len(PALETTE)], 255) for i in range(len(model.classes))} | {CLASS_NODATA: (0, 0, 0, 0)}
        )
    return counts


def building_fractions(
    class_raster: Any, features: list[geo.Feature], classes: tuple[str, ...]
) -> list[dict[str, Any]]:
    """One GeoJSON feature per footprint with ``fractions`` of classified pixels (None if it has none)."""
    results = []
    for feature in features:
        window = geo.geometry_window(feature.geometry, class_raster)
        counts = np.zeros(len(classes), dtype=np.int64)
        inside_pixels = 0
        if window is not None:
            data = class_raster.read(1, window=window)
            inside = geo.rasterize_window(feature.geometry, class_raster, window)
            inside_pixels = int(inside.sum())
            values = data[inside & (data != CLASS_NODATA)]
            counts = np.bincount(values, minlength=len(classes))[: len(classes)]
        classified = int(counts.sum())
        fractions = {c: float(n) / classified for c, n in zip(classes, counts, strict=True)} if classified else None
        properties = {
            "id": feature.id,
            "pixels": inside_pixels,
            "classifiedPixels": classified,
            "fractions": fractions,
            "dominantClass": classes[int(np.argmax(counts))] if classified else None,
        }
        results.append(geo.geojson_feature(geo.to_crs(feature.geometry, class_raster.crs, geo.WGS84), properties))
    return results


def write_class_quicklook(class_cog: Path, target: Path) -> None:
    """The class raster as a small PNG in :data:`PALETTE` (the COG's colour table), read from its overviews."""
    with rasterio.open(class_cog) as dataset:
        width, height = quicklook.quicklook_shape(dataset.width, dataset.height)
        classes = dataset.read(1, out_shape=(height, width), resampling=rasterio.enums.Resampling.nearest)
    quicklook.write_png(target, quicklook.colourise(classes.astype(np.uint8), PALETTE, CLASS_NODATA))


def _model_path(workdir: Workdir, settings: InferenceParams) -> Path:
    if settings.model is not None:
        return input_file(workdir, settings.model, "model")
    return default_vector(workdir, None, "model", "model.json")


def _buildings_path(workdir: Workdir, settings: InferenceParams) -> Path | None:
    if settings.buildings is None and not any(p.name == "buildings.geojson" for p in iter_files(workdir.inputs)):
        return None
    return default_vector(workdir, settings.buildings, "buildings", "buildings.geojson")


def run(workdir: Workdir, params: dict[str, Any], progress: ProgressLog) -> None:
    settings = read_params(InferenceParams, params, progress)
    model = load_model(_model_path(workdir, settings))
    raster_path = default_raster(workdir, settings.imagery)
    buildings_path = _buildings_path(workdir, settings)
    progress.step(f"model with classes {', '.join(model.classes)}; imagery {raster_path.name}")
    with tempfile.TemporaryDirectory(prefix="scratch-", dir=workdir.root) as scratch, geo.gdal_env():
        with geo.open_raster(raster_path) as dataset:
            if dataset.count != model.bands:
                raise WorkloadError(f"the model expects {model.bands} band(s), {raster_path.name} has {dataset.count}")
            features = geo.read_features(buildings_path, dataset.crs) if buildings_path else []
            scratch_tif = Path(scratch) / "classes_scratch.tif"
            counts = classify_raster(model, dataset, scratch_tif)
        progress.step(f"classified {int(counts.sum())} pixels; building the class COG")
        cog.write_cog(scratch_tif, workdir.output_path(CLASS_COG), resampling="mode")
    write_class_quicklook(workdir.output_path(CLASS_COG), workdir.output_path(CLASS_PNG))
    summary = {"classes": list(model.classes), "pixelsPerClass": dict(zip(model.classes, counts.tolist(), strict=True))}
    geo.write_json(workdir.output_path(SUMMARY_JSON), summary)
    if buildings_path is None:
        progress.step("no building footprints in inputs/; skipping per-building results")
    else:
        with rasterio.open(workdir.output_path(CLASS_COG)) as class_raster:
            results = building_fractions(class_raster, features, model.classes)
        geo.write_json(workdir.output_path(BUILDINGS_GEOJSON), geo.feature_collection(results), compact=True)
        progress.step(f"class fractions written for {len(results)} building(s)")
    write_manifest(workdir, WORKLOAD, extra={"summary": {**summary, "buildings": len(features)}})


def main() -> int:
    return run_main(WORKLOAD, run)
