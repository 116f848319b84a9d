"""An Azure ML job queued without compute says why, through the backend and the stand-in's real SDK entities."""

from __future__ import annotations

import pytest

from hastegeo.compute.azure_ml.entities import job_name
from hastegeo.compute.capacity import CapacityWait
from hastegeo.compute.contract import ComputeState
from hastegeo_dev.devhost.azurite import Azurite
from tests.unit.azure_ml.test_aml_adapter import Harness

pytestmark = pytest.mark.azurite
QUOTA = "Not enough quota available for Standard_NC6 in subscription 00000000. Request a quota increase."


def test_a_quota_error_on_a_queued_job_cannot_clear(azurite: Azurite, unique: str) -> None:
    harness = Harness(azurite, unique)
    harness.client.refuse_capacity("QuotaExceeded", QUOTA)
    handle = harness.backend.submit(harness.spec())
    status = harness.backend.status(handle)
    assert status.state is ComputeState.QUEUED
    compute = str(harness.client.submitted(job_name(harness.spec())).compute)
    assert status.capacity == CapacityWait(reason=f"compute {compute}: QuotaExceeded: {QUOTA}", blocked=True)
    assert status.detail == f"Azure ML: Queued (queued for compute): compute {compute}: QuotaExceeded: {QUOTA}"


def test_a_long_queue_is_a_wait_that_may_clear(azurite: Azurite, unique: str) -> None:
    harness = Harness(azurite, unique)
    harness.client.refuse_capacity(message="Waiting for 4 nodes; the cluster is at its maximum of 4")
    handle = harness.backend.submit(harness.spec())
    status = harness.backend.status(handle)
    assert status.capacity is not None
    assert not status.capacity.blocked
    assert status.capacity.reason.endswith(": Waiting for 4 nodes; the cluster is at its maximum of 4")
    harness.client.set_status(job_name(harness.spec()), "Running")
    assert harness.backend.status(handle).capacity is None  # running: nothing to wait for


def test_a_queued_job_without_a_reason_reports_none(azurite: Azurite, unique: str) -> None:
    harness = Harness(azurite, unique)
    handle = harness.backend.submit(harness.spec())
    harness.client.set_status(job_name(harness.spec()), "Queued")
    status = harness.backend.status(handle)
    assert status.state is ComputeState.QUEUED
    assert status.capacity is None
