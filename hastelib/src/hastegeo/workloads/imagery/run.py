"""Imagery preparation: mosaic GeoTIFFs, optionally clip to a WGS84 bbox, write a COG and its companions.

Parameters (all optional):

- ``sources``: file names under ``inputs/`` and/or https URLs (fetched under
  :mod:`hastegeo.workloads.imagery.fetch`'s policy); default: every GeoTIFF in inputs/.
- ``bbox``: ``[minLon, minLat, maxLon, maxLat]`` in WGS84.
- ``rgbBands``: three 1-based band numbers for the preview (default ``[1, 2, 3]``).
- ``previewMaxSize``: longest side of the preview in pixels (default 1024).
- ``allowedHosts`` / ``maxDownloadBytes``: narrow the operator's fetch policy.

Types, bounds and defaults: :class:`hastegeo.workloads.imagery.params.ImageryParams`, the model the API checks too;
only the band count of ``rgbBands`` is checked here, where the raster is known.

Outputs: ``imagery.tif`` (COG), ``preview.tif`` (8-bit RGB COG), ``preview.png``
(the same at most 512 pixels a side, nodata transparent: what a browser shows),
``band_stats.json``, ``valid_outline.geojson``, then the manifest.

One pass over the output grid, block by block, writes a tiled scratch
GeoTIFF while accumulating statistics and the outline; GDAL's COG driver
then lays it out. The preview is read from the COG's overviews, so its cost
does not grow with the raster either.
"""

from __future__ import annotations

import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import rasterio
from affine import Affine

from hastegeo.workloads._run import cog, geo, quicklook
from hastegeo.workloads._run.harness import ProgressLog, Workdir, WorkloadError, iter_files, run_main, write_manifest
from hastegeo.workloads._run.params import RASTER_SUFFIXES, input_file, read_params
from hastegeo.workloads._run.raster_stats import BandStats
from hastegeo.workloads.imagery import mosaic
from hastegeo.workloads.imagery.fetch import Fetcher, FetchPolicy, redact_url
from hastegeo.workloads.imagery.outline import OutlineBuilder
from hastegeo.workloads.imagery.params import ImageryParams

WORKLOAD = "imagery"
IMAGERY_COG = "imagery.tif"
PREVIEW_COG = "preview.tif"
PREVIEW_PNG = "preview.png"
STATS_JSON = "band_stats.json"
OUTLINE_GEOJSON = "valid_outline.geojson"


def _stage_sources(workdir: Workdir, settings: ImageryParams, scratch: Path, progress: ProgressLog) -> list[Path]:
    """Local paths of every source: inputs/ files as they are, URLs downloaded into scratch space."""
    names = settings.sources
    if names is None:
        names = sorted(
            p.relative_to(workdir.inputs).as_posix()
            for p in iter_files(workdir.inputs)
            if p.suffix.lower() in RASTER_SUFFIXES
        )
        if not names:
            raise WorkloadError("no GeoTIFF found in inputs/ and no 'sources' given")
    paths = []
    fetcher: Fetcher | None = None
    for index, name in enumerate(names):
        if "://" not in name:
            paths.append(input_file(workdir, name, "source"))
            continue
        if fetcher is None:
            policy = FetchPolicy.from_env(
                narrow_hosts=settings.allowed_hosts, narrow_max_bytes=settings.max_download_bytes
            )
            fetcher = Fetcher(policy)
        target = scratch / f"source_{index:03d}{Path(urlsplit(name).path).suffix or '.tif'}"
        progress.step(f"fetching {redact_url(name)}")
        size = fetcher.fetch(name, target)
        progress.step(f"fetched {redact_url(name)} ({size} bytes)")
        paths.append(target)
    return paths


def _rgb_bands(requested: list[int] | None, count: int) -> list[int]:
    """The preview's bands; the model checked the type and range, only the raster knows its band count."""
    value = requested if requested is not None else [1, 2, 3] if count >= 3 else [1, 1, 1]
    if not all(1 <= band <= count for band in value):
        raise WorkloadError(f"parameter 'rgbBands' must be three band numbers in [1, {count}], got {value!r}")
    return list(value)


def _write_preview(
    source: Path, target: Path, scratch: Path, stats: BandStats, bands: list[int], max_size: int
) -> None:
    """8-bit RGB: each band stretched over mean ± 2 std (within min/max); 0 is nodata, 1..255 valid.

    Also writes the PNG quicklook beside ``target`` (:data:`PREVIEW_PNG`) from the same pixels.
    """
    with rasterio.open(source) as dataset:
        scale = min(1.0, max_size / max(dataset.width, dataset.height))
        height, width = max(1, round(dataset.height * scale)), max(1, round(dataset.width * scale))
        data = dataset.read(bands, out_shape=(3, height, width), resampling=rasterio.enums.Resampling.average)
        valid = geo.valid_mask(data, dataset.nodata)
        transform = dataset.transform @ Affine.scale(dataset.width / width, dataset.height / height)
        crs = dataset.crs
    rgb = np.zeros((3, height, width), dtype=np.uint8)
    for i, band in enumerate(bands):
        mean, std = stats.mean[band - 1], stats.std[band - 1]
        low = max(mean - 2 * std, stats.minimum[band - 1])
        high = min(mean + 2 * std, stats.maximum[band - 1])
        span = high - low if high > low else 1.0
        scaled = 1.0 + 254.0 * (data[i].astype(np.float64) - low) / span
        rgb[i] = np.where(valid, np.clip(np.rint(scaled), 1, 255), 0).astype(np.uint8)
    scratch_path = scratch / "preview_scratch.tif"
    profile = cog.scratch_profile(width, height, 3, "uint8", crs, transform, 0)
    with rasterio.open(scratch_path, "w", **profile) as out:
        out.write(rgb)
        out.colorinterp = [
            rasterio.enums.ColorInterp.red,
            rasterio.enums.ColorInterp.green,
            rasterio.enums.ColorInterp.blue,
        ]
    cog.write_cog(scratch_path, target, resampling="average")
    quicklook.write_png(target.with_name(PREVIEW_PNG), quicklook.shrink(quicklook.rgba_from_bands(rgb)))


def run(workdir: Workdir, params: dict[str, Any], progress: ProgressLog) -> None:
    settings = read_params(ImageryParams, params, progress)
    bbox = None if settings.bbox is None else (settings.bbox[0], settings.bbox[1], settings.bbox[2], settings.bbox[3])
    preview_max = settings.preview_max_size
    with tempfile.TemporaryDirectory(prefix="scratch-", dir=workdir.root) as scratch_name, geo.gdal_env():
        scratch = Path(scratch_name)
        paths = _stage_sources(workdir, settings, scratch, progress)
        with ExitStack() as stack:
            datasets = [stack.enter_context(geo.open_raster(p)) for p in paths]
            progress.step(f"opened {len(datasets)} source(s): {', '.join(p.name for p in paths)}")
            clip = geo.bbox_to_crs(bbox, datasets[0].crs) if bbox is not None else None
            grid = mosaic.plan_grid(datasets, clip)
            rgb = _rgb_bands(settings.rgb_bands, grid.count)
            progress.step(f"mosaic grid {grid.width}x{grid.height} px, {grid.count} band(s), {grid.crs}")
            readers = [mosaic.SourceReader(d, grid) for d in datasets]
            stats, outline = BandStats(grid.count), OutlineBuilder()
            scratch_tif = scratch / "imagery_scratch.tif"
            profile = cog.scratch_profile(
                grid.width, grid.height, grid.count, grid.dtype, grid.crs, grid.transform, grid.nodata
            )
            with rasterio.open(scratch_tif, "w", **profile) as out:
                for window in geo.iter_windows(grid.width, grid.height, cog.COG_BLOCK):
                    data, valid = mosaic.read_mosaic(readers, grid, window)
                    out.write(data, window=window)
                    stats.add(data, valid)
                    outline.add(valid, window)
        if stats.count == 0:
            raise WorkloadError("the mosaic (after clipping) has no valid pixel")
        progress.step(f"mosaic written ({stats.count} valid pixels); building the COG")
        cog.write_cog(scratch_tif, workdir.output_path(IMAGERY_COG), resampling="average")
        progress.step("COG written; writing preview")
        _write_preview(
            workdir.output_path(IMAGERY_COG), workdir.output_path(PREVIEW_COG), scratch, stats, rgb, preview_max
        )
    geo.write_json(workdir.output_path(STATS_JSON), {"nodata": grid.nodata, **stats.to_json()})
    polygon = outline.to_wgs84(grid.transform, grid.crs)
    geo.write_json(
        workdir.output_path(OUTLINE_GEOJSON),
        geo.feature_collection([geo.geojson_feature(polygon, {"validPixels": stats.count})]),
        compact=True,
    )
    progress.step("statistics and outline written")
    summary = {
        "crs": str(grid.crs),
        "width": grid.width,
        "height": grid.height,
        "bands": grid.count,
        "bounds": list(grid.bounds),
        "validPixels": stats.count,
    }
    write_manifest(workdir, WORKLOAD, extra={"summary": summary})


def main() -> int:
    return run_main(WORKLOAD, run)
