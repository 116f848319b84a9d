"""One processor per workload, found by name."""

from __future__ import annotations

from hastegeo.processors.artifacts import ArtifactsProcessor
from hastegeo.processors.base import Processor
from hastegeo.processors.geo import EmbeddingProcessor, ImageryProcessor, InferenceProcessor, TrainingProcessor
from hastegeo.utils.errors import InvalidJobError

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


def processor_for(workload: str) -> Processor:
    try:
        return PROCESSORS[workload]
    except KeyError:
        raise InvalidJobError(f"workload: {workload!r} has no processor yet", field="workload") from None
