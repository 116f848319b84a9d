"""Training on the synthetic scene: beats the majority baseline, is deterministic, refuses unknown classes."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from hastegeo.workloads._run.classifier import MODEL_KIND, load_model
from hastegeo.workloads._run.sample_data import SampleScene

from .conftest import Job, RunJob


def test_classifier_beats_the_majority_baseline(training_job: Job) -> None:
    metrics = training_job.json("metrics.json")
    assert metrics["validationSamples"] > 0
    assert metrics["trainSamples"] > metrics["validationSamples"]
    assert metrics["validationAccuracy"] > metrics["majorityBaselineAccuracy"] + 0.3
    assert metrics["validationAccuracy"] > 0.85
    assert training_job.manifest("training")["summary"]["validationAccuracy"] == metrics["validationAccuracy"]


def test_metrics_per_iteration_and_confusion_matrix_agree(training_job: Job) -> None:
    metrics = training_job.json("metrics.json")
    history = metrics["history"]
    assert [row["iteration"] for row in history] == list(range(1, 301))
    assert history[-1]["loss"] < history[0]["loss"]
    with (training_job.outputs / "metrics.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 300
    assert float(rows[-1]["validationAccuracy"]) == history[-1]["validationAccuracy"]
    confusion = training_job.json("confusion_matrix.json")
    matrix = confusion["matrix"]
    total = sum(map(sum, matrix))
    assert total == metrics["validationSamples"]
    diagonal = sum(matrix[i][i] for i in range(len(matrix)))
    assert diagonal / total == metrics["validationAccuracy"]


def test_model_file_is_a_documented_pixel_classifier(training_job: Job, scene: SampleScene) -> None:
    document = training_job.json("model.json")
    assert document["kind"] == MODEL_KIND
    assert document["workload"] == "training"
    model = load_model(training_job.outputs / "model.json")
    assert model.classes == scene.classes
    assert model.bands == 3


def test_same_seed_gives_identical_outputs(
    training_job: Job, scene: SampleScene, mosaic_job: Job, run_workload: RunJob
) -> None:
    inputs: dict[str, Path | bytes | str] = {
        "imagery.tif": mosaic_job.outputs / "imagery.tif",
        "labels.geojson": scene.labels,
    }
    again = run_workload("training", inputs, {"classes": list(scene.classes), "seed": 11})
    assert again.code == 0
    for name in ("model.json", "metrics.json", "metrics.csv", "confusion_matrix.json"):
        assert (again.outputs / name).read_bytes() == (training_job.outputs / name).read_bytes(), name
    other = run_workload("training", inputs, {"classes": list(scene.classes), "seed": 12}, name="other-seed")
    assert (other.outputs / "metrics.json").read_bytes() != (training_job.outputs / "metrics.json").read_bytes()


def test_unknown_class_fails_readably(scene: SampleScene, mosaic_job: Job, run_workload: RunJob) -> None:
    inputs: dict[str, Path | bytes | str] = {
        "imagery.tif": mosaic_job.outputs / "imagery.tif",
        "labels.geojson": scene.labels,
    }
    job = run_workload("training", inputs, {"classes": ["water", "vegetation", "bare"]})
    assert job.code == 2
    assert "has unknown class 'building'; expected one of water, vegetation, bare" in job.stderr
    assert not job.has_manifest("training")
    assert not (job.outputs / "model.json").exists()


def test_missing_classes_and_labels_fail_readably(mosaic_job: Job, run_workload: RunJob) -> None:
    job = run_workload("training", {"imagery.tif": mosaic_job.outputs / "imagery.tif"}, {})
    assert job.code == 2
    assert "parameter 'classes': Field required" in job.stderr
    job = run_workload("training", {"imagery.tif": mosaic_job.outputs / "imagery.tif"}, {"classes": ["a", "b"]}, "x")
    assert job.code == 2
    assert "labels.geojson not found" in job.stderr
    broken = {"imagery.tif": mosaic_job.outputs / "imagery.tif", "labels.geojson": json.dumps({"type": "Point"})}
    job = run_workload("training", broken, {"classes": ["a", "b"]}, "y")
    assert job.code == 2
    assert "must be a GeoJSON FeatureCollection" in job.stderr


def scene_inputs(scene: SampleScene, mosaic_job: Job) -> dict[str, Path | bytes | str]:
    return {"imagery.tif": mosaic_job.outputs / "imagery.tif", "labels.geojson": scene.labels}


def test_an_interrupted_run_resumes_from_its_last_epoch_and_ends_with_the_same_model(
    scene: SampleScene, mosaic_job: Job, run_workload: RunJob, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hastegeo.workloads.training import run as training_run

    inputs = scene_inputs(scene, mosaic_job)
    params = {"classes": list(scene.classes), "seed": 11, "iterations": 300, "epochs": 4}
    whole = run_workload("training", inputs, params, name="whole")
    assert whole.code == 0

    original = training_run._save

    def preempted_after_two(workdir: Any, state: Any, epoch: int, epochs: int, key: str) -> None:
        original(workdir, state, epoch, epochs, key)
        if epoch == 2:
            raise KeyboardInterrupt  # the node goes away right after the second epoch's state is saved

    monkeypatch.setattr(training_run, "_save", preempted_after_two)
    with pytest.raises(KeyboardInterrupt):
        run_workload("training", inputs, params, name="resumed")
    monkeypatch.setattr(training_run, "_save", original)
    resumed = run_workload("training", inputs, params, name="resumed")
    assert resumed.code == 0
    log = (resumed.root / "logs" / "training_progress.log").read_text().splitlines()
    second = log[[i for i, line in enumerate(log) if line.endswith("training started")][-1] :]
    texts = [line.split(" ", 1)[1] for line in second]
    assert "resumed from the checkpoint folder, epoch 3 of 4" in texts
    assert [t.split(":")[0] for t in texts if t.startswith("epoch ")] == ["epoch 3 of 4", "epoch 4 of 4"]
    for name in ("model.json", "metrics.json", "metrics.csv", "confusion_matrix.json"):
        assert (resumed.outputs / name).read_bytes() == (whole.outputs / name).read_bytes(), name


def test_a_checkpoint_of_other_parameters_is_ignored(
    scene: SampleScene, mosaic_job: Job, run_workload: RunJob, monkeypatch: pytest.MonkeyPatch
) -> None:
    inputs = scene_inputs(scene, mosaic_job)
    first = run_workload("training", inputs, {"classes": list(scene.classes), "iterations": 40, "epochs": 4}, "a")
    assert first.code == 0
    state = first.root / "checkpoints" / "training_state.json"
    assert json.loads(state.read_text())["epoch"] == 3  # the last epoch's state is the model itself
    other = first.root.parent / "b"
    (other / "checkpoints").mkdir(parents=True)
    (other / "checkpoints" / "training_state.json").write_text(state.read_text())
    job = run_workload("training", inputs, {"classes": list(scene.classes), "iterations": 80, "epochs": 4}, "b")
    assert job.code == 0
    text = (job.root / "logs" / "training_progress.log").read_text()
    assert "the checkpoint does not match this job's parameters and data; starting from the first epoch" in text
    assert "epoch 1 of 4" in text
