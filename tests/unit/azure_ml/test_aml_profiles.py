"""Compute profiles on Azure ML (ADR 0043): the real command job entity, as the stand-in receives it, carries
the profile's compute, instance type and count, and the spot tier; a job without a profile carries none of them."""

from __future__ import annotations

import json

import pytest

from hastegeo.compute.azure_ml.entities import job_name
from hastegeo.utils.errors import ConfigurationError, TerminalBackendError
from hastegeo_dev.devhost.azurite import Azurite
from tests.unit.azure_ml.test_aml_adapter import Harness

pytestmark = pytest.mark.azurite

PROFILES = json.dumps(
    {
        "gpu-t4-spot": {
            "compute": "gpu-t4-cluster",
            "instanceType": "Standard_NC4as_T4_v3",
            "instanceCount": 2,
            "tier": "spot",
            "maxRunS": 14400,
            "workloads": ["imagery", "training"],
        },
        "cpu-small": {"compute": "cpu-small", "maxRunS": 900, "workloads": ["imagery"]},
    }
)


def test_a_spot_profile_job_carries_its_compute_shape_and_spot_tier(azurite: Azurite, unique: str) -> None:
    harness = Harness(azurite, unique, AML_PROFILES=PROFILES)
    spec = harness.spec().model_copy(update={"profile": "gpu-t4-spot", "time_limit_s": 14400})
    harness.backend.submit(spec)
    submitted = harness.client.submitted(job_name(spec))
    assert submitted.compute == "gpu-t4-cluster"
    assert submitted.resources.instance_type == "Standard_NC4as_T4_v3"
    assert submitted.resources.instance_count == 2
    assert submitted.queue_settings.job_tier == "Spot"
    assert submitted.limits.timeout == 14400
    rest = submitted._to_rest_object().properties  # what the service is sent
    assert rest.queue_settings.job_tier == "Spot"
    assert (rest.resources.instance_type, rest.resources.instance_count) == ("Standard_NC4as_T4_v3", 2)


def test_a_dedicated_profile_has_no_tier_and_default_has_no_shape(azurite: Azurite, unique: str) -> None:
    harness = Harness(azurite, unique, AML_PROFILES=PROFILES)
    small = harness.spec("job-0002").model_copy(update={"profile": "cpu-small", "time_limit_s": 900})
    harness.backend.submit(small)
    entity = harness.client.submitted(job_name(small))
    assert (entity.compute, entity.queue_settings) == ("cpu-small", None)
    plain = harness.spec("job-0003")
    harness.backend.submit(plain)
    entity = harness.client.submitted(job_name(plain))
    assert (entity.compute, entity.queue_settings) == ("haste-cpu", None)
    assert entity.resources is None or entity.resources.instance_type is None


def test_a_profile_the_settings_no_longer_declare_is_refused_by_name(azurite: Azurite, unique: str) -> None:
    harness = Harness(azurite, unique, AML_PROFILES=PROFILES)
    gone = harness.spec("job-0004").model_copy(update={"profile": "gpu-a100"})
    with pytest.raises((ConfigurationError, TerminalBackendError), match="no profile 'gpu-a100'"):
        harness.backend.submit(gone)
