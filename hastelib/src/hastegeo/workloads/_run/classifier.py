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


@dataclass
class TrainingState:
    """Where gradient descent stands: enough to go on from here and end with the same model bit for bit."""

    iteration: int
    weights: Floats
    bias: Floats
    history: list[dict[str, float]]

    def to_json(self) -> dict[str, Any]:
        return {
            "iteration": self.iteration,
            "weights": self.weights.tolist(),
            "bias": self.bias.tolist(),
            "history": self.history,
        }

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> TrainingState:
        """Raises KeyError, TypeError or ValueError for a document that is not a state."""
        return cls(
            int(document["iteration"]),
            np.asarray(document["weights"], dtype=np.float64),
            np.asarray(document["bias"], dtype=np.float64),
            [{key: float(value) for key, value in row.items()} for row in document["history"]],
        )


class Trainer:
    """Full-batch gradient descent that can stop after any iteration and go on from a saved state.

    Standardisation comes from the training set alone, so a trainer rebuilt from the same data and a
    saved :class:`TrainingState` continues exactly where the saved one stopped.
    """

    def __init__(
        self, train_set: Dataset, validation: Dataset, classes: tuple[str, ...], learning_rate: float, l2: float
    ) -> None:
        self.classes, self.learning_rate, self.l2 = classes, learning_rate, l2
        mean = train_set.values.mean(axis=0)
        std = train_set.values.std(axis=0)
        self.mean, self.std = mean, np.where(std > 0, std, 1.0)
        self.x = (train_set.values - self.mean) / self.std
        self.xv = (validation.values - self.mean) / self.std
        self.labels, self.validation_labels = train_set.labels, validation.labels
        self.onehot = np.eye(len(classes))[train_set.labels]

    def start(self) -> TrainingState:
        n_classes = len(self.classes)
        return TrainingState(0, np.zeros((self.x.shape[1], n_classes)), np.zeros(n_classes), [])

    def fits(self, state: TrainingState) -> bool:
        """Whether ``state`` is one of this trainer's (same bands and classes)."""
        return state.weights.shape == (self.x.shape[1], len(self.classes)) and state.bias.shape == (len(self.classes),)

    def run(self, state: TrainingState, until: int) -> TrainingState:
        """``state`` advanced to iteration ``until``; one metrics row per iteration."""
        weights, bias = state.weights.copy(), state.bias.copy()
        history = list(state.history)
        x, xv, labels = self.x, self.xv, self.labels
        for iteration in range(state.iteration + 1, until + 1):
            logits = x @ weights + bias
            loss, probabilities = _softmax_loss(logits, labels)
            loss += 0.5 * self.l2 * float((weights**2).sum())
            gradient = probabilities - self.onehot
            weights -= self.learning_rate * (x.T @ gradient / len(x) + self.l2 * weights)
            bias -= self.learning_rate * gradient.mean(axis=0)
            row = {
                "iteration": float(iteration),
                "loss": loss,
                "accuracy": float((logits.argmax(axis=1) == labels).mean()),
            }
            if len(xv):
                validation_logits = xv @ weights + bias
                row["validationLoss"], _ = _softmax_loss(validation_logits, self.validation_labels)
                row["validationAccuracy"] = float((validation_logits.argmax(axis=1) == self.validation_labels).mean())
            history.append(row)
        return TrainingState(max(until, state.iteration), weights, bias, history)

    def model(self, state: TrainingState) -> PixelClassifier:
        return PixelClassifier(self.classes, self.mean, self.std, state.weights, state.bias)


def train(
    train_set: Dataset,
    validation: Dataset,
    classes: tuple[str, ...],
    iterations: int,
    learning_rate: float,
    l2: float,
) -> tuple[PixelClassifier, list[dict[str, float]]]:
    """Full-batch gradient descent; returns the model and one metrics row per iteration."""
    trainer = Trainer(train_set, validation, classes, learning_rate, l2)
    state = trainer.run(trainer.start(), iterations)
    return trainer.model(state), state.history


def confusion_matrix(truth: Ints, predicted: Ints, n_classes: int) -> Ints:
    """Rows are true classes, columns predicted classes."""
    matrix: Ints = np.zeros((n_classes, n_classes), dtype=np.int64)
    np.add.at(matrix, (truth, predicted), 1)
    return matrix
