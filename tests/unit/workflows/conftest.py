"""Fixtures for the workload tests: a generated scene and a way to run a workload in a temp workdir.

Workloads are run through ``run_main`` exactly as on compute: the job's
directory comes from ``HASTE_JOB_WORKDIR`` (set with monkeypatch) and its
parameters from ``params.json``.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hastegeo.workloads._run.harness import run_main
from hastegeo.workloads._run.sample_data import SampleScene, generate
from hastegeo.workloads.embedding import run as embedding
from hastegeo.workloads.imagery import run as imagery
from hastegeo.workloads.inference import run as inference
from hastegeo.workloads.training import run as training

BODIES = {
    "imagery": imagery.run,
    "training": training.run,
    "inference": inference.run,
    "embedding": embedding.run,
}


@dataclass
class Job:
    root: Path
    code: int
    stderr: str

    @property
    def outputs(self) -> Path:
        return self.root / "outputs"

    def manifest(self, workload: str) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads((self.outputs / f"{workload}_manifest.json").read_text())
        return loaded

    def has_manifest(self, workload: str) -> bool:
        return (self.outputs / f"{workload}_manifest.json").exists()

    def progress(self, workload: str) -> list[str]:
        return (self.root / "logs" / f"{workload}_progress.log").read_text().splitlines()

    def json(self, name: str) -> Any:
        return json.loads((self.outputs / name).read_text())


def prepare_job(root: Path, inputs: dict[str, Path | bytes | str], params: dict[str, Any]) -> Path:
    """A workdir with ``inputs`` (name -> file to copy, or content) and ``params.json``."""
    (root / "inputs").mkdir(parents=True, exist_ok=True)
    for name, source in inputs.items():
        target = root / "inputs" / name
        if isinstance(source, Path):
            shutil.copy(source, target)
        elif isinstance(source, bytes):
            target.write_bytes(source)
        else:
            target.write_text(source)
    (root / "params.json").write_text(json.dumps(params))
    return root


def run_job(
    mp: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str] | None,
    workload: str,
    root: Path,
    inputs: dict[str, Path | bytes | str],
    params: dict[str, Any] | None = None,
) -> Job:
    prepare_job(root, inputs, params or {})
    mp.setenv("HASTE_JOB_WORKDIR", str(root))
    mp.delenv("HASTE_PARAMS_JSON", raising=False)
    code = run_main(workload, BODIES[workload])
    stderr = capsys.readouterr().err if capsys is not None else ""
    return Job(root, code, stderr)


RunJob = Callable[..., Job]


@pytest.fixture
def run_workload(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> RunJob:
    """``run_workload(workload, inputs, params, name="job")`` -> :class:`Job` (in a fresh temp workdir)."""

    def run(
        workload: str, inputs: dict[str, Path | bytes | str], params: dict[str, Any] | None = None, name: str = "job"
    ) -> Job:
        return run_job(monkeypatch, capsys, workload, tmp_path / name, inputs, params)

    return run


@pytest.fixture(scope="session")
def scene(tmp_path_factory: pytest.TempPathFactory) -> SampleScene:
    """The 512 x 512 synthetic scene, generated once per session."""
    return generate(tmp_path_factory.mktemp("scene"), size=512, seed=7)


@pytest.fixture(scope="session")
def mosaic_job(scene: SampleScene, tmp_path_factory: pytest.TempPathFactory) -> Job:
    """The imagery workload run once over both tiles of the scene (no clip)."""
    root = tmp_path_factory.mktemp("imagery")
    with pytest.MonkeyPatch.context() as mp:
        inputs: dict[str, Path | bytes | str] = {p.name: p for p in scene.rasters}
        job = run_job(mp, None, "imagery", root, inputs, {"previewMaxSize": 256})
    assert job.code == 0
    return job


@pytest.fixture(scope="session")
def training_job(scene: SampleScene, mosaic_job: Job, tmp_path_factory: pytest.TempPathFactory) -> Job:
    root = tmp_path_factory.mktemp("training")
    with pytest.MonkeyPatch.context() as mp:
        inputs: dict[str, Path | bytes | str] = {
            "imagery.tif": mosaic_job.outputs / "imagery.tif",
            "labels.geojson": scene.labels,
        }
        job = run_job(mp, None, "training", root, inputs, {"classes": list(scene.classes), "seed": 11})
    assert job.code == 0
    return job


@pytest.fixture(scope="session")
def inference_job(
    scene: SampleScene, mosaic_job: Job, training_job: Job, tmp_path_factory: pytest.TempPathFactory
) -> Job:
    """The inference workload run once over the scene with the trained model and its footprints."""
    root = tmp_path_factory.mktemp("inference")
    with pytest.MonkeyPatch.context() as mp:
        inputs: dict[str, Path | bytes | str] = {
            "imagery.tif": mosaic_job.outputs / "imagery.tif",
            "model.json": training_job.outputs / "model.json",
            "buildings.geojson": scene.buildings,
        }
        job = run_job(mp, None, "inference", root, inputs)
    assert job.code == 0, job.stderr
    return job
