"""Training: labelled polygons over imagery -> a pixel classifier, its metrics and confusion matrix.

Parameters:

- ``classes`` (required): the class names, in the order the model numbers them.
- ``imagery``: raster under inputs/ (default ``imagery.tif``, else the only GeoTIFF).
- ``labels``: GeoJSON under inputs/ (default ``labels.geojson``); ``classProperty`` (default ``class``).
- ``seed`` (0), ``validationFraction`` (0.25), ``iterations`` (300), ``learningRate`` (0.5),
  ``l2`` (0.0001), ``maxSamplesPerClass`` (50000), ``epochs`` (1).

With ``epochs`` > 1 the state after each epoch but the last is saved in the checkpoint folder
(``$HASTE_CHECKPOINT_DIR/training_state.json``); an attempt that finds one there (put back by the
runtime after a preemption, a retry or a fail-over) runs only the remaining epochs, and ends
with the same model as an uninterrupted run.

Types, bounds and defaults: :class:`hastegeo.workloads.training.params.TrainingParams`, the model the API checks too.

Outputs: ``model.json``, ``metrics.json``, ``metrics.csv``, ``confusion_matrix.json``, then the manifest.
The same inputs and seed give byte-identical outputs (the manifest's time stamp aside).
"""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from hastegeo.utils.files import write_text
from hastegeo.workloads._run import geo
from hastegeo.workloads._run.classifier import Dataset, Trainer, TrainingState, confusion_matrix
from hastegeo.workloads._run.harness import (
    ProgressLog,
    Workdir,
    WorkloadError,
    restored_from,
    run_main,
    write_manifest,
)
from hastegeo.workloads._run.params import default_raster, default_vector, read_params
from hastegeo.workloads.training import labels
from hastegeo.workloads.training.params import TrainingParams

WORKLOAD = "training"
MODEL_FILE = "model.json"
METRICS_JSON = "metrics.json"
METRICS_CSV = "metrics.csv"
CONFUSION_JSON = "confusion_matrix.json"
CSV_COLUMNS = ("iteration", "loss", "accuracy", "validationLoss", "validationAccuracy")
STATE_FILE = "training_state.json"


def _write_csv(path: Path, history: list[dict[str, float]]) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(CSV_COLUMNS)
        for row in history:
            writer.writerow([int(row["iteration"]), *(repr(row[c]) if c in row else "" for c in CSV_COLUMNS[1:])])


def run(workdir: Workdir, params: dict[str, Any], progress: ProgressLog) -> None:
    settings = read_params(TrainingParams, params, progress)
    classes, seed, fraction = settings.classes, settings.seed, settings.validation_fraction
    iterations, learning_rate, l2 = settings.iterations, settings.learning_rate, settings.l2
    cap = settings.max_samples_per_class
    prop = settings.class_property
    raster_path = default_raster(workdir, settings.imagery)
    labels_path = default_vector(workdir, settings.labels, "labels", "labels.geojson")
    rng = np.random.default_rng(seed)
    with geo.gdal_env(), geo.open_raster(raster_path) as dataset:
        features = geo.read_features(labels_path, dataset.crs)
        indices = labels.class_indices(features, classes, prop)
        progress.step(f"read {len(features)} labelled polygon(s) from {labels_path.name}")
        samples = labels.sample_pixels(dataset, features, indices, cap, rng)
        nodata = dataset.nodata
        bands = dataset.count
    samples = labels.balance(samples, cap, rng)
    counts = np.bincount(samples.labels, minlength=len(classes))
    progress.step("labelled pixels per class: " + ", ".join(f"{c}={n}" for c, n in zip(classes, counts, strict=True)))
    if (counts > 0).sum() < 2:
        raise WorkloadError("labels cover fewer than two classes with valid pixels; nothing to learn")
    for name, count in zip(classes, counts, strict=True):
        if count == 0:
            progress.step(f"warning: class {name!r} has no labelled pixel; the model will never predict it")
    train_set, validation = labels.split(samples, fraction, rng)
    progress.step(f"training on {len(train_set.labels)} pixels, validating on {len(validation.labels)}")
    trainer = Trainer(train_set, validation, tuple(classes), learning_rate, l2)
    epochs = settings.epochs
    key = _state_key(settings, train_set, bands)
    state, done = _resume(workdir, trainer, key, epochs, progress)
    for epoch in range(done + 1, epochs + 1):
        state = trainer.run(state, iterations * epoch // epochs)
        if epoch < epochs:  # the last epoch's state is the model itself
            _save(workdir, state, epoch, epochs, key)
        if epochs > 1:
            progress.step(f"epoch {epoch} of {epochs}: loss {state.history[-1]['loss']:.4f}")
    model, history = trainer.model(state), state.history
    final = history[-1]
    predicted = model.predict(validation.values)
    matrix = confusion_matrix(validation.labels, predicted, len(classes))
    majority = int(np.argmax(np.bincount(train_set.labels, minlength=len(classes))))
    baseline = float((validation.labels == majority).mean()) if len(validation.labels) else None
    validation_accuracy = final.get("validationAccuracy")
    progress.step(
        f"trained {iterations} iterations: loss {final['loss']:.4f}, train accuracy {final['accuracy']:.3f}, "
        f"validation accuracy {validation_accuracy if validation_accuracy is None else round(validation_accuracy, 3)} "
        f"(majority baseline {baseline if baseline is None else round(baseline, 3)})"
    )
    summary = {
        "seed": seed,
        "iterations": iterations,
        "trainSamples": len(train_set.labels),
        "validationSamples": len(validation.labels),
        "validationAccuracy": validation_accuracy,
        "majorityBaselineAccuracy": baseline,
    }
    geo.write_json(workdir.output_path(MODEL_FILE), model.to_json(nodata, {**summary, "bands": bands}))
    geo.write_json(
        workdir.output_path(METRICS_JSON),
        {
            "classes": classes,
            "samplesPerClass": dict(zip(classes, counts.tolist(), strict=True)),
            **summary,
            "trainAccuracy": final["accuracy"],
            "finalLoss": final["loss"],
            "history": [{**row, "iteration": int(row["iteration"])} for row in history],
        },
    )
    _write_csv(workdir.output_path(METRICS_CSV), history)
    geo.write_json(
        workdir.output_path(CONFUSION_JSON),
        {"classes": classes, "rows": "true class", "columns": "predicted class", "matrix": matrix.tolist()},
    )
    progress.step("model, metrics and confusion matrix written")
    write_manifest(workdir, WORKLOAD, extra={"summary": summary})


def _state_key(settings: TrainingParams, train_set: Dataset, bands: int) -> str:
    """What a saved state must have been trained on: these parameters, this many samples and bands."""
    document = {"params": settings.model_dump(mode="json"), "samples": len(train_set.labels), "bands": bands}
    return hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()


def _save(workdir: Workdir, state: TrainingState, epoch: int, epochs: int, key: str) -> None:
    """The state after ``epoch``, written whole (the runtime never copies a half-written file)."""
    document = {"epoch": epoch, "epochs": epochs, "key": key, **state.to_json()}
    write_text(workdir.checkpoints / STATE_FILE, json.dumps(document))


def _resume(
    workdir: Workdir, trainer: Trainer, key: str, epochs: int, progress: ProgressLog
) -> tuple[TrainingState, int]:
    """The saved state and the epochs it completed, or a fresh start when there is none that fits."""
    path = workdir.checkpoints / STATE_FILE
    if not path.exists():
        return trainer.start(), 0
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        state, done = TrainingState.from_json(document), int(document["epoch"])
        fits = document.get("key") == key and trainer.fits(state) and 0 < done < epochs
    except (ValueError, KeyError, TypeError):
        fits = False
    if not fits:
        progress.step("the checkpoint does not match this job's parameters and data; starting from the first epoch")
        return trainer.start(), 0
    progress.step(f"resumed from {restored_from() or 'the checkpoint folder'}, epoch {done + 1} of {epochs}")
    return state, done


def main() -> int:
    return run_main(WORKLOAD, run, checkpoints=True)
