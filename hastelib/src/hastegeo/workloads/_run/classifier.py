"""A small pixel classifier in numpy: multinomial logistic regression on standardised band values.

Why this model: it trains in well under a second on a laptop CPU, is fully
deterministic (full-batch gradient descent, no shuffling), and its file is a
readable JSON document anyone can apply without this code:

    class = argmax(((x - featureMean) / featureStd) @ weights + bias)

The file format (``kind: haste-pixel-classifier``, ``formatVersion: 1``) is
documented in docs/workloads.md; :func:`load_model` refuses anything else.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from hastegeo.workloads._run.harness import WorkloadError

MODEL_KIND = "haste-pixel-classifier"
FORMAT_VERSION = 1
ALGORITHM = "multinomial-logistic-regression"
Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]


@dataclass(frozen=True)
class PixelClassifier:
    classes: tuple[str, ...]
    feature_mean: Floats
    feature_std: Floats
    weights: Floats  # bands x classes
    bias: Floats  # classes

    @property
    def bands(self) -> int:
        return int(self.weights.shape[0])

    def logits(self, values: npt.NDArray[Any]) -> Floats:
        """Scores for ``values`` shaped (pixels, bands)."""
        standardised = (values.astype(np.float64) - self.feature_mean) / self.feature_std
        result: Floats = standardised @ self.weights + self.bias
        return result

    def predict(self, values: npt.NDArray[Any]) -> Ints:
        result: Ints = np.argmax(self.logits(values), axis=1).astype(np.int64)
        return result

    def to_json(self, nodata: float | None, training: dict[str, Any]) -> dict[str, Any]:
        return {
            "kind": MODEL_KIND,
            "formatVersion": FORMAT_VERSION,
            "workload": "training",
            "algorithm": ALGORITHM,
            "classes": list(self.classes),
            "bands": self.bands,
            "nodata": nodata,
            "featureMean": self.feature_mean.tolist(),
            "featureStd": self.feature_std.tolist(),
            "weights": self.weights.tolist(),
            "bias": self.bias.tolist(),
            "training": training,
        }


def load_model(path: Path) -> PixelClassifier:
    """Read a model file; anything that is not a haste pixel classifier raises :class:`WorkloadError`."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WorkloadError(f"model file {path.name} is not a {MODEL_KIND} (not JSON)") from exc
    if not isinstance(document, dict) or document.get("kind") != MODEL_KIND:
        kind = document.get("kind") if isinstance(document, dict) else type(document).__name__
        raise WorkloadError(f"model file {path.name} is not a {MODEL_KIND} (kind={kind!r})")
    if document.get("formatVersion") != FORMAT_VERSION or document.get("algorithm") != ALGORITHM:
        raise WorkloadError(
            f"model file {path.name} has format {document.get('formatVersion')!r} / {document.get('algorithm')!r}; "
            f"expected {FORMAT_VERSION} / {ALGORITHM}"
        )
    try:
        classes = tuple(str(c) for c in document["classes"])
        model = PixelClassifier(
            classes=classes,
            feature_mean=np.asarray(document["featureMean"], dtype=np.float64),
            feature_std=np.asarray(document["featureStd"], dtype=np.float64),
            weights=np.asarray(document["weights"], dtype=np.float64),
            bias=np.asarray(document["bias"], dtype=np.float64),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise WorkloadError(f"model file {path.name} is incomplete: {exc}") from exc
    bands = model.feature_mean.shape
    if (
        model.weights.shape != (bands[0], len(classes))
        or model.bias.shape != (len(classes),)
        or model.feature_std.shape != bands
        or not (model.feature_std > 0).all()
    ):
        raise WorkloadError(f"model file {path.name} has inconsistent array shapes")
    return model


@dataclass(frozen=True)
class Dataset:
    values: Floats  # samples x bands
    labels: Ints  # samples


def _softmax_loss(logits: Floats, labels: Ints) -> tuple[float, Floats]:
    """Mean cross-entropy and the softmax probabilities."""
    shifted = logits - logits.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    probabilities: Floats = exp / exp.sum(axis=1, keepdims=True)
    picked = probabilities[np.arange(len(labels)), labels]
    loss = float(-np.log(np.clip(picked, 1e-12, None)).mean())
    return loss, probabilities


def train(
    train_set: Dataset,
    validation: Dataset,
    classes: tuple[str, ...],
    iterations: int,
    learning_rate: float,
    l2: float,
) -> tuple[PixelClassifier, list[dict[str, float]]]:
    """Full-batch gradient descent; returns the model and one metrics row per iteration."""
    mean = train_set.values.mean(axis=0)
    std = train_set.values.std(axis=0)
    std = np.where(std > 0, std, 1.0)
    x = (train_set.values - mean) / std
    xv = (validation.values - mean) / std
    n_classes = len(classes)
    weights = np.zeros((x.shape[1], n_classes))
    bias = np.zeros(n_classes)
    onehot = np.eye(n_classes)[train_set.labels]
    history: list[dict[str, float]] = []
    for iteration in range(1, iterations + 1):
        logits = x @ weights + bias
        loss, probabilities = _softmax_loss(logits, train_set.labels)
        loss += 0.5 * l2 * float((weights**2).sum())
        gradient = probabilities - onehot
        weights -= learning_rate * (x.T @ gradient / len(x) + l2 * weights)
        bias -= learning_rate * gradient.mean(axis=0)
        row = {
            "iteration": float(iteration),
            "loss": loss,
            "accuracy": float((logits.argmax(axis=1) == train_set.labels).mean()),
        }
        if len(xv):
            validation_logits = xv @ weights + bias
            row["validationLoss"], _ = _softmax_loss(validation_logits, validation.labels)
            row["validationAccuracy"] = float((validation_logits.argmax(axis=1) == validation.labels).mean())
        history.append(row)
    return PixelClassifier(classes, mean, std, weights, bias), history


def confusion_matrix(truth: Ints, predicted: Ints, n_classes: int) -> Ints:
    """Rows are true classes, columns predicted classes."""
    matrix: Ints = np.zeros((n_classes, n_classes), dtype=np.int64)
    np.add.at(matrix, (truth, predicted), 1)
    return matrix
