"""Raster and vector plumbing shared by the workloads: open, iterate windows, read and place features.

Every raster is processed block by block (:func:`iter_windows`), so memory
depends on the block size, not on the raster's size. GDAL's own cache is
capped by :func:`gdal_env` for the same reason.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import rasterio
import rasterio.features
import shapely
from affine import Affine
from pyproj import CRS, Transformer
from rasterio.errors import RasterioIOError
from rasterio.windows import Window
from shapely.geometry import mapping, shape
from shapely.geometry.base import BaseGeometry

from hastegeo.workloads._run.harness import WorkloadError

BLOCK = 256
GDAL_CACHE_MB = 64
WGS84 = CRS.from_epsg(4326)
Mask = npt.NDArray[np.bool_]


@contextmanager
def gdal_env() -> Iterator[None]:
    """GDAL settings for a workload: a bounded block cache and no sidecar files next to inputs."""
    with rasterio.Env(GDAL_CACHEMAX=GDAL_CACHE_MB, GDAL_PAM_ENABLED="NO", CHECK_DISK_FREE_SPACE="FALSE"):
        yield


@contextmanager
def open_raster(path: Path) -> Iterator[Any]:
    """Open a raster for reading; a file GDAL cannot read becomes a readable :class:`WorkloadError`."""
    try:
        dataset = rasterio.open(path)
    except RasterioIOError as exc:
        raise WorkloadError(f"{path.name} is not a readable raster ({str(exc).splitlines()[0][:200]})") from exc
    try:
        if dataset.crs is None:
            raise WorkloadError(f"{path.name} has no coordinate reference system")
        transform = dataset.transform
        if transform.b != 0 or transform.d != 0 or transform.e >= 0:
            raise WorkloadError(f"{path.name} is rotated or south-up; only north-up rasters are supported")
        yield dataset
    finally:
        dataset.close()


def iter_windows(width: int, height: int, block: int = BLOCK) -> Iterator[Window]:
    """Row-major blocks of at most ``block`` x ``block`` pixels covering the raster."""
    for row in range(0, height, block):
        for col in range(0, width, block):
            yield Window(col, row, min(block, width - col), min(block, height - row))


def valid_mask(data: npt.NDArray[Any], nodata: float | None) -> Mask:
    """Pixels (rows, cols) where no band is nodata (or NaN for float rasters)."""
    valid: Mask = np.ones(data.shape[1:], dtype=bool)
    if nodata is not None:
        if np.isnan(nodata):
            valid &= ~np.isnan(data).any(axis=0)
        else:
            valid &= (data != nodata).all(axis=0)
    if np.issubdtype(data.dtype, np.floating):
        valid &= ~np.isnan(data).any(axis=0)
    return valid


def to_crs(geometry: BaseGeometry, source: CRS, target: CRS) -> BaseGeometry:
    """Reproject a shapely geometry (x/y order, i.e. lon/lat for WGS84)."""
    if source == target:
        return geometry
    transformer = Transformer.from_crs(source, target, always_xy=True)

    def apply(coords: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        x, y = transformer.transform(coords[:, 0], coords[:, 1])
        return np.column_stack([x, y])

    return shapely.transform(geometry, apply)


def bbox_to_crs(bbox: tuple[float, float, float, float], crs: Any) -> tuple[float, float, float, float]:
    """The envelope, in ``crs``, of a WGS84 bbox (edges densified so curvature is covered)."""
    transformer = Transformer.from_crs(WGS84, CRS.from_user_input(crs), always_xy=True)
    left, bottom, right, top = transformer.transform_bounds(*bbox, densify_pts=64)
    return (float(left), float(bottom), float(right), float(top))


@dataclass(frozen=True)
class Feature:
    index: int
    id: str
    geometry: BaseGeometry
    properties: dict[str, Any]


def _geojson_crs(document: dict[str, Any]) -> CRS:
    """RFC 7946 GeoJSON is WGS84; the legacy ``crs`` member (e.g. ``EPSG:32633``) is honoured."""
    legacy = document.get("crs")
    if isinstance(legacy, dict):
        name = (legacy.get("properties") or {}).get("name")
        if isinstance(name, str):
            try:
                return CRS.from_user_input(name)
            except Exception as exc:
                raise WorkloadError(f"GeoJSON crs {name!r} is not understood") from exc
    return WGS84


def read_features(path: Path, target_crs: Any) -> list[Feature]:
    """Polygonal features of a GeoJSON FeatureCollection, reprojected to ``target_crs``."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WorkloadError(f"{path.name} is not valid GeoJSON: {exc}") from exc
    if not isinstance(document, dict) or document.get("type") != "FeatureCollection":
        raise WorkloadError(f"{path.name} must be a GeoJSON FeatureCollection")
    source_crs = _geojson_crs(document)
    target = CRS.from_user_input(target_crs)
    features = []
    for index, item in enumerate(document.get("features") or []):
        try:
            geometry = shape(item["geometry"])
        except Exception as exc:
            raise WorkloadError(f"{path.name}: feature {index} has no valid geometry") from exc
        if geometry.geom_type not in {"Polygon", "MultiPolygon"}:
            raise WorkloadError(f"{path.name}: feature {index} is a {geometry.geom_type}, expected a polygon")
        properties = dict(item.get("properties") or {})
        raw_id = properties.get("id", item.get("id", index))
        features.append(Feature(index, str(raw_id), to_crs(geometry, source_crs, target), properties))
    return features


def feature_collection(features: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "FeatureCollection", "features": features}


def geojson_feature(geometry: BaseGeometry | None, properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "Feature", "geometry": None if geometry is None else mapping(geometry), "properties": properties}


def geometry_window(geometry: BaseGeometry, dataset: Any, pad: int = 0) -> Window | None:
    """The pixel window covering ``geometry`` (plus ``pad`` pixels), clipped to the raster; None if outside."""
    left, bottom, right, top = geometry.bounds
    inverse = ~dataset.transform
    col0, row0 = inverse @ (left, top)
    col1, row1 = inverse @ (right, bottom)
    c0 = max(int(np.floor(min(col0, col1))) - pad, 0)
    r0 = max(int(np.floor(min(row0, row1))) - pad, 0)
    c1 = min(int(np.ceil(max(col0, col1))) + pad, dataset.width)
    r1 = min(int(np.ceil(max(row0, row1))) + pad, dataset.height)
    if c1 <= c0 or r1 <= r0:
        return None
    return Window(c0, r0, c1 - c0, r1 - r0)


def rasterize_window(geometry: BaseGeometry, dataset: Any, window: Window) -> Mask:
    """Pixels of ``window`` whose centre lies inside ``geometry``."""
    height, width = int(window.height), int(window.width)
    burned = rasterio.features.rasterize(
        [(mapping(geometry), 1)],
        out_shape=(height, width),
        transform=dataset.transform @ Affine.translation(int(window.col_off), int(window.row_off)),
        fill=0,
        all_touched=False,
        dtype="uint8",
    )
    mask: Mask = burned.astype(bool)
    return mask


def write_json(path: Path, document: Any, compact: bool = False) -> None:
    """Write JSON (compact for GeoJSON, whose coordinates would otherwise take a line each)."""
    text = json.dumps(document, separators=(",", ":")) if compact else json.dumps(document, indent=2)
    path.write_text(text + "\n", encoding="utf-8")
