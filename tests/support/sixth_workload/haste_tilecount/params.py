"""The tilecount workload's parameters."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from hastegeo.models.params import Params


class TilecountParams(Params):
    suffix: str = Field("", max_length=16, description="Count only files whose name ends so (default: every file).")

    model_config = ConfigDict(json_schema_extra={"examples": [{"suffix": ".tif"}]})
