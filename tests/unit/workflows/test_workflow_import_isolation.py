"""What the Functions app may import from ``hastegeo.workloads`` stays free of geospatial packages, and what
compute starts for every job (``python -m hastegeo.workloads.<name>``) loads nothing of the pipeline."""

from __future__ import annotations

import subprocess
import sys

import pytest

from hastegeo.workloads.registry import workload_names

GEOSPATIAL = ("numpy", "rasterio", "shapely", "pyproj", "affine")


@pytest.mark.parametrize(
    "module",
    [
        "hastegeo.workloads",
        "hastegeo.workloads.registry",
        "hastegeo.workloads._run.harness",
        "hastegeo.workloads._run.params",
        "hastegeo.workloads.imagery.fetch",
        "hastegeo.models.params",
        "hastegeo.workloads.artifacts.run",
        "hastegeo.workflows.artifacts",
        *(f"hastegeo.workloads.{name}" for name in workload_names()),
        *(f"hastegeo.workloads.{name}.processor" for name in workload_names()),
    ],
)
def test_light_modules_import_no_geospatial_package(module: str) -> None:
    code = f"import sys, {module}; print(','.join(m for m in {GEOSPATIAL!r} if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert result.stdout.strip() == ""


# What a workload launcher must never pull in: the Azure SDKs, the pipeline, the adapters, the job models,
# the processors (which need the job models) and the registry (which lists every workload).
HEAVY = (
    "azure",
    "hastegeo.pipeline",
    "hastegeo.compute",
    "hastegeo.models.job",
    "hastegeo.workloads.processor",
    "hastegeo.workloads.geospatial",
    "hastegeo.workloads.registry",
)


def _heavy_loaded_by(code: str) -> str:
    script = f"{code}\nprint(','.join(m for m in sys.modules if m.startswith({HEAVY!r}) or m.endswith('.processor')))"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60)
    return result.stdout.strip()


def test_the_parameter_models_keep_the_workload_launcher_light() -> None:
    """``python -m hastegeo.workloads.artifacts`` validates with its folder's model, importing only pydantic."""
    code = (
        "import sys, hastegeo.workloads.artifacts.run\n"
        "from hastegeo.workloads.artifacts.params import ArtifactsParams\n"
        "ArtifactsParams.model_validate({'compressLevel': 1})"
    )
    assert _heavy_loaded_by(code) == ""


@pytest.mark.parametrize("name", workload_names())
def test_what_compute_starts_for_a_workload_loads_no_pipeline(name: str) -> None:
    """What ``-m`` loads before the workload's ``main`` runs: its folder's package and ``run.py``."""
    code = f"import sys, hastegeo.workloads.{name}.run"
    assert _heavy_loaded_by(code) == ""


def test_the_check_sees_a_heavy_import() -> None:
    """The control: importing a processor is seen."""
    assert "hastegeo.models.job" in _heavy_loaded_by("import sys, hastegeo.workloads.artifacts.processor")
