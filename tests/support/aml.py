"""The Azure ML backend on a stand-in: its settings and the production factory given a StandInMLClient."""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import pytest

from hastegeo.compute.azure_ml.adapter import AzureMLBackend, create
from hastegeo.compute.catalog import descriptors
from hastegeo.compute.context import BackendContext
from hastegeo_dev.testing.aml_standin import StandInMLClient

# What enables Azure ML for the artifacts workload, pointed at nothing real (the stand-in answers).
AML_SETTINGS = {
    "AML_MODE": "Existing",
    "AML_SUBSCRIPTION_ID": "00000000-0000-0000-0000-000000000000",
    "AML_RESOURCE_GROUP": "rg-haste",
    "AML_WORKSPACE": "ws-haste",
    "AML_IMAGE": "hasteacr.azurecr.io/haste/runtime:1.0",
    "AML_COMPUTE": "artifacts=haste-cpu",
}


def route_to_standin(monkeypatch: pytest.MonkeyPatch, standin: StandInMLClient) -> None:
    """Make the registry's ``azure_ml`` factory the production ``create`` given ``standin`` (for this test)."""

    def factory(context: BackendContext) -> AzureMLBackend:
        return create(context, client_factory=lambda _settings: standin)

    known = cast(dict[str, Any], descriptors())
    monkeypatch.setitem(known, "azure_ml", dataclasses.replace(known["azure_ml"], factory=factory))
