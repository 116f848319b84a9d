"""What the Functions app may import from ``hastegeo.workflows`` stays free of geospatial packages."""

from __future__ import annotations

import subprocess
import sys

import pytest

GEOSPATIAL = ("numpy", "rasterio", "shapely", "pyproj", "affine")


@pytest.mark.parametrize(
    "module",
    ["hastegeo.workflows", "hastegeo.workflows.runtime", "hastegeo.workflows.params", "hastegeo.workflows.fetch"],
)
def test_light_modules_import_no_geospatial_package(module: str) -> None:
    code = f"import sys, {module}; print(','.join(m for m in {GEOSPATIAL!r} if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert result.stdout.strip() == ""
