"""Builders shared by the Azure ML backend tests (no network, no Azure account)."""

from __future__ import annotations

import warnings
from typing import Any

from hastegeo.compute.azure_ml.settings import AmlSettings
from hastegeo.compute.contract import BlobLocation, ComputeJobSpec, InputFile
from hastegeo.settings.load import load_settings

# azure-ai-ml's marshmallow schemas warn once per class, at import: import it here, quietly.
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import azure.ai.ml  # noqa: F401, TID251


def aml_settings(**overrides: Any) -> AmlSettings:
    values: dict[str, Any] = {
        "AML_MODE": "Existing",
        "AML_SUBSCRIPTION_ID": "00000000-0000-0000-0000-000000000000",
        "AML_RESOURCE_GROUP": "rg-haste",
        "AML_WORKSPACE": "ws-haste",
        "AML_IMAGE": "hasteacr.azurecr.io/haste/runtime:1.0",
    }
    values.update(overrides)
    return AmlSettings.model_validate({k: v for k, v in values.items() if v is not None})


def context_settings(connection_string: str, **aml: str) -> AmlSettings:
    """The Azure ML section of settings loaded whole, with Azure ML enabled against the stand-in and Azurite."""
    env = {
        "AzureWebJobsStorage": connection_string,
        "HASTE_BACKENDS_ENABLED": "local,azure_ml",
        "AML_MODE": "Existing",
        "AML_SUBSCRIPTION_ID": "00000000-0000-0000-0000-000000000000",
        "AML_RESOURCE_GROUP": "rg-haste",
        "AML_WORKSPACE": "ws-haste",
        "AML_IMAGE": "hasteacr.azurecr.io/haste/runtime:1.0",
        "AML_RETRY_DELAY_S": "0.5",
        **aml,
    }
    return load_settings({k: v for k, v in env.items() if v}).section(AmlSettings)


def make_spec(job_id: str = "job-0001", **overrides: Any) -> ComputeJobSpec:
    values: dict[str, Any] = {
        "job_id": job_id,
        "name": f"haste-{job_id}",
        "workload": "imagery",
        "entrypoint": ("python", "-m", "hastegeo.workloads.imagery"),
        "env": {"HASTE_PARAMS_JSON": '{"bands": 3}', "HASTE_JOB_ID": job_id},
        "inputs": (
            InputFile(source=BlobLocation(container="haste-inputs", path="p1/scene.tif"), dest="scene.tif"),
            InputFile(source=BlobLocation(container="haste-inputs", path="p1/tiles"), dest="tiles", is_prefix=True),
        ),
        "output": BlobLocation(container="haste-outputs", path=f"p1/{job_id}"),
        "labels": {"project": "p1", "job": job_id, "workload": "imagery"},
    }
    values.update(overrides)
    return ComputeJobSpec(**values)
