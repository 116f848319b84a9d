"""Training on the synthetic scene: beats the majority baseline, is deterministic, refuses unknown classes."""

from __future__ import annotations

import csv
import json
from pathlib import Path

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
