"""Every Batch call goes through the one retried, translated call: transient faults retried, terminal ones translated.

Through the real ``BatchClient`` against the Batch test service, whose faults
are injected per operation; the sleeper is injected, so nothing really waits.
"""

from __future__ import annotations

import pytest
from azure.core.exceptions import HttpResponseError

from hastegeo.compute.contract import ComputeState
from hastegeo.utils.errors import TerminalBackendError, TransientBackendError
from tests.integration.azure_batch.conftest import Rig

pytestmark = pytest.mark.azurite


def test_a_busy_create_is_retried_and_a_lost_create_response_binds_to_the_job_that_exists(rig: Rig) -> None:
    backend = rig.make()
    rig.service.faults.fail("create_job", 503, "ServerBusy", times=1)
    rig.service.faults.lose_response("create_job")
    handle = backend.submit(rig.spec("calls-1"))
    calls = rig.service.calls("haste-calls-1")
    assert (calls["create_job"], calls["get_job"], calls["create_task"]) == (3, 1, 1)  # busy, lost, JobExists → bound
    assert len(rig.sleeps) == 2
    rig.wait(handle)
    assert backend.status(handle).state is ComputeState.SUCCEEDED


def test_a_refused_create_is_terminal_at_once_and_names_the_code(rig: Rig) -> None:
    backend = rig.make()
    rig.service.faults.fail("create_task", 400, "InvalidPropertyValue", message="The value of commandLine is invalid")
    with pytest.raises(TerminalBackendError) as raised:
        backend.submit(rig.spec("calls-2"))
    assert str(raised.value) == (
        "submitting Batch job haste-calls-2: InvalidPropertyValue: The value of commandLine is invalid"
    )
    assert raised.value.backend == "azure_batch"
    assert isinstance(raised.value.__cause__, HttpResponseError)
    assert rig.service.calls("haste-calls-2")["create_task"] == 1
    assert rig.sleeps == []


def test_a_create_refused_as_finished_reports_that_refusal_when_no_task_exists(rig: Rig) -> None:
    backend = rig.make()
    rig.service.faults.fail("create_task", 409, "JobCompleted", message="The specified job is already completed.")
    with pytest.raises(TerminalBackendError, match="JobCompleted: The specified job is already completed") as raised:
        backend.submit(rig.spec("calls-3"))
    assert "TaskNotFound" not in str(raised.value)  # the lookup's 404 says less than the create's refusal
    assert rig.service.calls("haste-calls-3")["get_task"] == 1


def test_a_cancel_whose_task_termination_stays_busy_is_transient_and_names_the_task(rig: Rig) -> None:
    backend = rig.make(BATCH_RETRY_ATTEMPTS="2")
    handle = backend.submit(rig.spec("calls-4", code="import time; time.sleep(30)"))
    rig.service.faults.fail("terminate_task", 500, "InternalError", times=5, message="The server hit a snag")
    with pytest.raises(TransientBackendError) as raised:
        backend.cancel(handle)
    assert str(raised.value) == "terminating Batch task haste-calls-4: InternalError: The server hit a snag"
    assert rig.service.calls("haste-calls-4")["terminate_task"] == 2
    rig.service.faults.clear()
    backend.cancel(handle)  # the job is terminated already; the task's termination is not an error
    assert backend.status(handle).state is ComputeState.CANCELLED


def test_a_pool_that_cannot_be_read_leaves_the_status_without_a_capacity_reason(rig: Rig) -> None:
    backend = rig.make(BATCH_RETRY_ATTEMPTS="2")
    rig.service.faults.refuse_capacity("cpu-pool", "AllocationFailed", "no nodes")
    handle = backend.submit(rig.spec("calls-5"))
    rig.service.faults.fail("get_pool", 503, "ServerBusy", times=5)
    status = backend.status(handle)
    assert (status.state, status.capacity, status.detail) == (ComputeState.QUEUED, None, "waiting for a node")
    assert len(rig.sleeps) == 1  # the pool read was retried within its budget, then given up quietly
    rig.service.faults.grant_capacity("cpu-pool")
    rig.service.faults.clear()
    backend.cancel(handle)
