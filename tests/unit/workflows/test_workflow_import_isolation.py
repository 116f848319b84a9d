"""What the Functions app may import from ``hastegeo.workflows`` stays free of geospatial packages."""

from __future__ import annotations

import subprocess
import sys

import pytest

GEOSPATIAL = ("numpy", "rasterio", "shapely", "pyproj", "affine")


@pytest.mark.parametrize(
    "module",
    [
        "hastegeo.workflows",
        "hastegeo.workflows.runtime",
        "hastegeo.workflows.params",
        "hastegeo.workflows.fetch",
        "hastegeo.models.params",
        "hastegeo.workflows.artifacts",
    ],
)
def test_light_modules_import_no_geospatial_package(module: str) -> None:
    code = f"import sys, {module}; print(','.join(m for m in {GEOSPATIAL!r} if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert result.stdout.strip() == ""


# What a workload launcher must never pull in: the Azure SDKs, the pipeline, the adapters, the job models.
HEAVY = ("azure", "hastegeo.pipeline", "hastegeo.compute", "hastegeo.processors", "hastegeo.models.job")


def test_the_parameter_models_keep_the_workload_launcher_light() -> None:
    """``python -m hastegeo.workflows.artifacts`` validates with the shared model, and imports only pydantic for it."""
    code = (
        "import sys, hastegeo.workflows.artifacts\n"
        "from hastegeo.models.params import ArtifactsParams\n"
        "ArtifactsParams.model_validate({'compressLevel': 1})\n"
        f"print(','.join(m for m in sys.modules if m.split('.')[0] == 'azure' or m.startswith({HEAVY!r})))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert result.stdout.strip() == ""
