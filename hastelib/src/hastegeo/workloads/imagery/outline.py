"""The valid-data outline of a raster as a WGS84 polygon, built block by block.

Each block's valid pixels are vectorised in pixel coordinates (integers, so
the pieces of neighbouring blocks share edges exactly), merged once at the
end, cleaned of collinear vertices, densified so long edges follow the
projection's curvature, and reprojected to WGS84.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import rasterio.features
import shapely
from affine import Affine
from rasterio.windows import Window
from shapely import affinity
from shapely.geometry import shape
from shapely.geometry.base import BaseGeometry

from hastegeo.workloads._run import geo

DENSIFY_PIXELS = 64.0


class OutlineBuilder:
    def __init__(self) -> None:
        self._pieces: list[BaseGeometry] = []

    def add(self, valid: geo.Mask, window: Window) -> None:
        if not valid.any():
            return
        offset = Affine.translation(int(window.col_off), int(window.row_off))
        for geometry, _ in rasterio.features.shapes(
            valid.astype(np.uint8), mask=valid, connectivity=4, transform=offset
        ):
            self._pieces.append(shape(geometry))

    def pixel_outline(self) -> BaseGeometry | None:
        """The merged outline in pixel coordinates, or None if no pixel is valid."""
        if not self._pieces:
            return None
        return shapely.unary_union(self._pieces).simplify(0)

    def to_wgs84(self, transform: Affine, crs: Any) -> BaseGeometry | None:
        outline = self.pixel_outline()
        if outline is None:
            return None
        dense = shapely.segmentize(outline, DENSIFY_PIXELS)
        a, b, c, d, e, f = transform.a, transform.b, transform.c, transform.d, transform.e, transform.f
        projected = affinity.affine_transform(dense, [a, b, d, e, c, f])
        return geo.to_crs(projected, crs, geo.WGS84)
