"""One processor per workload, found by name."""

from __future__ import annotations

from hastegeo.processors.artifacts import ArtifactsProcessor
from hastegeo.processors.base import Processor
from hastegeo.processors.geo import EmbeddingProcessor, ImageryProcessor, InferenceProcessor, TrainingProcessor

PROCESSORS: dict[str, Processor] = {
    processor.workload: processor
    for processor in (
        ImageryProcessor(),
        TrainingProcessor(),
        InferenceProcessor(),
        EmbeddingProcessor(),
        ArtifactsProcessor(),
    )
}
