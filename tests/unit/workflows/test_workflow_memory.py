"""Memory stays flat: imagery's peak RSS on a 2048² scene is close to its peak on a 512² scene.

Reading the whole 2048² mosaic would add at least 25 MB (uint16) and, with
the float64 statistics, well over 100 MB; block-by-block processing keeps
the difference to GDAL's bounded cache.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hastegeo.workloads._run.sample_data import generate
from tests.bench.workloads_bench import run_measured


def _imagery_peak(root: Path, size: int) -> float:
    scene = generate(root / "scene", size=size, seed=1)
    (root / "job" / "inputs").mkdir(parents=True)
    for path in scene.rasters:
        shutil.copy(path, root / "job" / "inputs" / path.name)
    measurement = run_measured("imagery", root / "job", size)
    assert measurement.returncode == 0, measurement.stderr
    assert (root / "job" / "outputs" / "imagery_manifest.json").exists()
    return measurement.peak_mb


@pytest.mark.slow
def test_imagery_peak_memory_does_not_grow_with_the_raster(tmp_path: Path) -> None:
    small = _imagery_peak(tmp_path / "small", 512)
    large = _imagery_peak(tmp_path / "large", 2048)  # 16 times the pixels
    assert large / small < 1.4, (small, large)
    assert large - small < 48, (small, large)
