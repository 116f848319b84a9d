"""The training workload's parameters: what the API validates and the workload reads on compute."""

from __future__ import annotations

from typing import Self

from pydantic import ConfigDict, Field, field_validator, model_validator

from hastegeo.models.params import MAX_CLASSES, InputName, Params, Seed, Text


class TrainingParams(Params):
    classes: list[Text] = Field(
        min_length=2,
        max_length=MAX_CLASSES,
        description="Class names, unique; their order is the model's class index.",
    )
    imagery: InputName | None = Field(None, description="Raster to sample (default imagery.tif, else the only one).")
    labels: InputName | None = Field(None, description="GeoJSON of labelled polygons (default labels.geojson).")
    class_property: Text = Field("class", description="Property holding each polygon's class.")
    seed: Seed = 0
    validation_fraction: float = Field(0.25, ge=0.05, le=0.9, description="Share of each class held out.")
    iterations: int = Field(300, ge=1, le=100_000, description="Gradient-descent steps.")
    epochs: int = Field(
        1,
        ge=1,
        le=1000,
        description="Parts the iterations are split into; the state is checkpointed after each but the last, "
        "and a next attempt resumes from the latest (docs/workloads.md#checkpoints).",
    )
    learning_rate: float = Field(0.5, ge=1e-6, le=10.0, description="Step size.")
    l2: float = Field(0.0001, ge=0.0, le=10.0, description="Weight decay.")
    max_samples_per_class: int = Field(
        50_000, ge=10, le=10_000_000, description="Pixels drawn at most per polygon and per class."
    )

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"classes": ["water", "vegetation", "bare", "building"], "seed": 7}]}
    )

    @model_validator(mode="after")
    def _epochs_fit(self) -> Self:
        if self.epochs > self.iterations:
            raise ValueError("epochs must not exceed iterations")
        return self

    @field_validator("classes")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("class names must be unique")
        return value
