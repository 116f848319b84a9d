"""The inference workload's parameters: what the API validates and the workload reads on compute."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from hastegeo.models.params import InputName, Params


class InferenceParams(Params):
    model: InputName | None = Field(None, description="Model file under inputs/ (default model.json).")
    imagery: InputName | None = Field(None, description="Raster to classify (default imagery.tif, else the only one).")
    buildings: InputName | None = Field(None, description="Footprints GeoJSON (default buildings.geojson if present).")

    model_config = ConfigDict(json_schema_extra={"examples": [{"model": "model/model.json"}]})
