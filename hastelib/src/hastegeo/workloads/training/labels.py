"""Turn labelled polygons into training pixels, and split them without spatial leakage.

Each polygon is rasterised only over its own bounding window (pixel centres
inside the polygon, nodata excluded), so memory follows the labels, not the
raster. The validation split holds out whole polygons per class: pixels of
one polygon are strongly correlated, and a pixel-level split would report a
validation accuracy the model does not have on new areas. A class with a
single polygon falls back to a pixel split inside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from hastegeo.workloads._run import geo
from hastegeo.workloads._run.classifier import Dataset
from hastegeo.workloads._run.harness import WorkloadError


@dataclass(frozen=True)
class Samples:
    values: npt.NDArray[np.float64]  # samples x bands
    labels: npt.NDArray[np.int64]
    groups: npt.NDArray[np.int64]  # index of the polygon each sample came from


def class_indices(features: list[geo.Feature], classes: list[str], prop: str) -> list[int]:
    """The class index of each feature; a missing or unknown class raises :class:`WorkloadError`."""
    lookup = {name: i for i, name in enumerate(classes)}
    indices = []
    for feature in features:
        value = feature.properties.get(prop)
        if value is None:
            raise WorkloadError(f"label feature {feature.index} has no {prop!r} property")
        if str(value) not in lookup:
            raise WorkloadError(
                f"label feature {feature.index} has unknown class {value!r}; expected one of {', '.join(classes)}"
            )
        indices.append(lookup[str(value)])
    return indices


def sample_pixels(
    dataset: Any, features: list[geo.Feature], indices: list[int], cap: int, rng: np.random.Generator
) -> Samples:
    """Band values of valid pixels under each polygon (at most ``cap`` per polygon, drawn at random)."""
    values, labels, groups = [], [], []
    for feature, class_index in zip(features, indices, strict=True):
        window = geo.geometry_window(feature.geometry, dataset)
        if window is None:
            continue
        data = dataset.read(window=window)
        inside = geo.rasterize_window(feature.geometry, dataset, window) & geo.valid_mask(data, dataset.nodata)
        pixels = data[:, inside].T.astype(np.float64)
        if len(pixels) > cap:
            pixels = pixels[np.sort(rng.choice(len(pixels), cap, replace=False))]
        values.append(pixels)
        labels.append(np.full(len(pixels), class_index, dtype=np.int64))
        groups.append(np.full(len(pixels), feature.index, dtype=np.int64))
    if not values:
        raise WorkloadError("no labelled polygon overlaps the imagery")
    return Samples(np.concatenate(values), np.concatenate(labels), np.concatenate(groups))


def split(samples: Samples, fraction: float, rng: np.random.Generator) -> tuple[Dataset, Dataset]:
    """Hold out about ``fraction`` of each class's polygons (or pixels, for a single-polygon class)."""
    held = np.zeros(len(samples.labels), dtype=bool)
    for class_index in np.unique(samples.labels):
        in_class = samples.labels == class_index
        polygons = np.unique(samples.groups[in_class])
        if len(polygons) >= 2:
            count = min(max(1, round(len(polygons) * fraction)), len(polygons) - 1)
            chosen = rng.choice(polygons, count, replace=False)
            held |= in_class & np.isin(samples.groups, chosen)
        else:
            positions = np.flatnonzero(in_class)
            count = min(max(1, round(len(positions) * fraction)), len(positions) - 1) if len(positions) > 1 else 0
            held[rng.choice(positions, count, replace=False)] = True
    train = Dataset(samples.values[~held], samples.labels[~held])
    validation = Dataset(samples.values[held], samples.labels[held])
    return train, validation


def balance(samples: Samples, cap: int, rng: np.random.Generator) -> Samples:
    """At most ``cap`` samples per class, so one huge polygon does not drown the others."""
    keep = np.zeros(len(samples.labels), dtype=bool)
    for class_index in np.unique(samples.labels):
        positions = np.flatnonzero(samples.labels == class_index)
        if len(positions) > cap:
            positions = rng.choice(positions, cap, replace=False)
        keep[positions] = True
    return Samples(samples.values[keep], samples.labels[keep], samples.groups[keep])
