"""The Batch adapter through the real BatchClient against the Batch test service and Azurite."""

from __future__ import annotations

import pytest
from azure.core.exceptions import HttpResponseError

from hastegeo.compute.contract import ComputeBackend, ComputeState
from hastegeo.utils.errors import TerminalBackendError, TransientBackendError
from tests.integration.azure_batch.conftest import Rig

pytestmark = pytest.mark.azurite

# Per-job Batch call budget of one successful run: create job, create task, switch to terminatejob,
# one status read at the end, one node read, delete workdir, terminate (409: already completed).
HAPPY_BUDGET = {
    "create_job": 1,
    "create_task": 1,
    "update_job": 1,
    "get_task": 1,
    "get_task_file": 1,
    "delete_task_file": 1,
    "terminate_job": 1,
}


def test_submit_status_read_cleanup_within_the_call_budget(rig: Rig) -> None:
    backend = rig.make()
    assert isinstance(backend, ComputeBackend)
    spec = rig.spec("happy-1", env={"HASTE_PARAMS_JSON": '{"who": "batch"}'})
    handle = backend.submit(spec)
    assert handle.provider_ids == {"job_id": "haste-happy-1", "task_id": "haste-happy-1", "pool_id": "cpu-pool"}
    rig.wait(handle)
    status = backend.status(handle)
    assert (status.state, status.exit_code, status.reason) == (ComputeState.SUCCEEDED, 0, None)
    assert backend.read_output(handle, "outputs/x.txt").data == b"hello batch"  # params.json reached the workload
    backend.cleanup(handle)
    assert rig.blob("p1/happy-1/outputs/x.txt") == b"hello batch"
    assert rig.blob("p1/happy-1/logs/progress.log") == b"step 1 done\n"
    assert rig.blob("p1/happy-1/logs/stdout.txt") == b"finished\n"
    assert dict(rig.service.calls("haste-happy-1")) == HAPPY_BUDGET
    assert rig.sleeps == []
    task = rig.service.task("haste-happy-1", "haste-happy-1")
    assert task.body["containerSettings"]["imageName"] == "haste/imagery:1"
    assert task.task_dir is not None
    assert not (task.task_dir / "wd").exists()


def test_node_gone_after_completion_degrades_to_the_blob_copy(rig: Rig) -> None:
    backend = rig.make()
    rig.service.faults.node_lost_after_completion(not_ready_calls=3)
    handle = backend.submit(rig.spec("nodeloss-1"))
    rig.wait(handle)
    assert backend.status(handle).state is ComputeState.SUCCEEDED  # task state lives in the service
    read = backend.read_output(handle, "outputs/x.txt")
    assert read.data is None  # 3× NodeNotReady, then NodeNotFound
    reason = read.unavailable_reason
    assert reason == (
        "NodeNotReady: Node is not able to perform the requested operations in its current state; "
        "then NodeNotFound: The specified node does not exist"
    )
    assert "RequestId" not in reason
    assert "{" not in reason
    assert rig.blob("p1/nodeloss-1/outputs/x.txt") == b"hello world"  # uploaded on task completion
    backend.cleanup(handle, reason)  # no delete on a gone node; the job is still terminated; nothing raised
    calls = rig.service.calls("haste-nodeloss-1")
    assert calls["get_task_file"] == 4
    assert calls["delete_task_file"] == 0
    assert calls["terminate_job"] == 1
    assert rig.sleeps == [0.5, 1.0, 2.0]  # injected: nothing really slept


def test_node_still_not_ready_when_the_budget_ends_reads_none_with_a_readable_reason(rig: Rig) -> None:
    backend = rig.make(BATCH_RETRY_ATTEMPTS="2")
    rig.service.faults.node_lost_after_completion(not_ready_calls=5)
    handle = backend.submit(rig.spec("nodeloss-2"))
    rig.wait(handle)
    read = backend.read_output(handle, "outputs/x.txt")
    assert read.data is None
    assert read.unavailable_reason == (
        "NodeNotReady: Node is not able to perform the requested operations in its current state"
    )


NODE_STATE_INVALID = "The node is in an invalid state for this operation."


def test_node_state_invalid_is_a_node_in_transition_retried_within_the_budget(rig: Rig) -> None:
    backend = rig.make()
    handle = backend.submit(rig.spec("stateinvalid-1"))
    rig.wait(handle)
    rig.service.faults.fail("get_task_file", 409, "NodeStateInvalid", times=2, message=NODE_STATE_INVALID)
    read = backend.read_output(handle, "outputs/x.txt")
    assert read.data == b"hello world"  # the node answered on attempt 3
    assert rig.service.calls("haste-stateinvalid-1")["get_task_file"] == 3
    assert rig.sleeps == [0.5, 1.0]
    assert read.unavailable_reason is None


def test_node_state_invalid_past_the_budget_is_unavailable_not_a_failure(rig: Rig) -> None:
    backend = rig.make(BATCH_RETRY_ATTEMPTS="3")
    handle = backend.submit(rig.spec("stateinvalid-2"))
    rig.wait(handle)
    rig.service.faults.fail("get_task_file", 409, "NodeStateInvalid", times=10, message=NODE_STATE_INVALID)
    read = backend.read_output(handle, "outputs/x.txt")
    assert read.data is None  # not a TerminalBackendError
    assert read.unavailable_reason == f"NodeStateInvalid: {NODE_STATE_INVALID.rstrip('.')}"
    backend.cleanup(handle, read.unavailable_reason)  # the node is not believed alive: no delete, still terminated
    calls = rig.service.calls("haste-stateinvalid-2")
    assert (calls["get_task_file"], calls["delete_task_file"], calls["terminate_job"]) == (3, 0, 1)


def test_cleanup_on_a_node_in_transition_skips_the_delete_without_waiting(rig: Rig) -> None:
    backend = rig.make()
    handle = backend.submit(rig.spec("stateinvalid-3"))
    rig.wait(handle)
    rig.service.faults.fail("delete_task_file", 409, "NodeStateInvalid", times=10, message=NODE_STATE_INVALID)
    backend.cleanup(handle)  # best-effort: nothing raised, the retention time reclaims the disk
    calls = rig.service.calls("haste-stateinvalid-3")
    assert (calls["delete_task_file"], calls["terminate_job"]) == (1, 1)
    assert rig.sleeps == []


def test_task_failure_reports_exit_code_and_last_stderr_lines(rig: Rig) -> None:
    backend = rig.make()
    code = (
        "import sys; print('loading scene'); print('error: scene p1/a.tif has no bands', file=sys.stderr); sys.exit(3)"
    )
    handle = backend.submit(rig.spec("fail-1", code))
    rig.wait(handle)
    status = backend.status(handle)
    assert status.state is ComputeState.FAILED
    assert status.exit_code == 3
    assert status.reason == "exit code 3: error: scene p1/a.tif has no bands"


def test_a_preempted_task_reruns_and_succeeds_with_the_requeue_noted(rig: Rig) -> None:
    backend = rig.make()
    rig.service.faults.preempt(times=1)
    handle = backend.submit(rig.spec("preempt-1"))
    rig.wait(handle)
    status = backend.status(handle)
    assert status.state is ComputeState.SUCCEEDED
    assert status.detail == "task requeued after node preemption (retry 1)"
    assert rig.blob("p1/preempt-1/outputs/x.txt") == b"hello world"


def test_a_lost_create_response_binds_to_the_task_that_exists(rig: Rig) -> None:
    backend = rig.make()
    rig.service.faults.lose_response("create_task")
    handle = backend.submit(rig.spec("lost-1"))
    rig.wait(handle)
    calls = rig.service.calls("haste-lost-1")
    assert calls["create_task"] == 2  # the retry met TaskExists …
    assert calls["get_task"] == 1  # … compared the fingerprint, and bound
    assert backend.status(handle).state is ComputeState.SUCCEEDED
    assert rig.service.task("haste-lost-1", "haste-lost-1").retry_count == 0  # one task, run once


def test_submitting_twice_binds_and_a_foreign_job_is_refused(rig: Rig) -> None:
    backend = rig.make()
    first = backend.submit(rig.spec("twice-1"))
    second = backend.submit(rig.spec("twice-1"))
    assert first.provider_ids == second.provider_ids
    assert rig.service.calls("haste-twice-1")["create_task"] == 2
    with pytest.raises(TerminalBackendError, match="belongs to another submission"):
        backend.submit(rig.spec("twice-1", code="print('someone else')"))


def test_throttling_is_retried_within_the_budget_honouring_retry_after(rig: Rig) -> None:
    backend = rig.make()
    handle = backend.submit(rig.spec("throttle-1"))
    rig.wait(handle)
    rig.service.faults.fail("get_task", 429, "TooManyRequests", times=1, retry_after=3)
    rig.service.faults.fail("get_task", 503, "ServerBusy", times=1)
    assert backend.status(handle).state is ComputeState.SUCCEEDED
    assert rig.sleeps == [3.0, 1.0]  # Retry-After, then our own backoff (0.5 × 2 for attempt 2)


def test_a_spent_budget_raises_transient_with_the_original_azure_error_chained(rig: Rig) -> None:
    backend = rig.make(BATCH_RETRY_ATTEMPTS="3")
    handle = backend.submit(rig.spec("spent-1"))
    rig.wait(handle)
    before = rig.service.calls("haste-spent-1")["get_task"]
    rig.service.faults.fail("get_task", 500, "InternalError", times=10, message="The server hit a snag")
    with pytest.raises(TransientBackendError) as raised:
        backend.status(handle)
    assert isinstance(raised.value.__cause__, HttpResponseError)
    assert str(raised.value).endswith("InternalError: The server hit a snag")
    assert rig.service.calls("haste-spent-1")["get_task"] - before == 3  # one budget, no SDK retries on top


def test_a_slow_answer_past_the_request_timeout_is_a_transient_error(rig: Rig) -> None:
    backend = rig.make(BATCH_REQUEST_TIMEOUT_S="0.3", BATCH_RETRY_ATTEMPTS="2")
    handle = backend.submit(rig.spec("slow-1"))
    rig.wait(handle)
    rig.service.faults.slow("get_task", 1.0, times=1)
    assert backend.status(handle).state is ComputeState.SUCCEEDED  # the second attempt answers in time
    assert len(rig.sleeps) == 1


def test_cancel_terminates_and_reports_cancelled_and_repeats_quietly(rig: Rig) -> None:
    backend = rig.make()
    handle = backend.submit(rig.spec("cancel-1", code="import time; time.sleep(30)"))
    task = rig.service.task("haste-cancel-1", "haste-cancel-1")
    for _ in range(200):  # bounded: wait until the process runs
        if task.process is not None:
            break
        task.done.wait(0.02)
    backend.cancel(handle)
    status = backend.status(handle)
    assert status.state is ComputeState.CANCELLED
    backend.cancel(handle)  # already finished: not an error
    backend.cleanup(handle)


def test_wrong_key_is_a_terminal_error(rig: Rig) -> None:
    backend = rig.make(BATCH_ACCOUNT_KEY="d3Jvbmcga2V5IHdyb25nIGtleSB3cm9uZyBrZXkgISE=")
    with pytest.raises(TerminalBackendError, match="AuthenticationFailed"):
        backend.submit(rig.spec("auth-1"))


def test_the_task_runs_as_a_non_admin_user_in_its_own_writable_working_directory(rig: Rig) -> None:
    """What reaches Batch: on Linux the container runs as the task user, who owns the task directory."""
    backend = rig.make()
    handle = backend.submit(rig.spec("user-1"))
    body = rig.service.task(handle.provider_ids["job_id"], handle.provider_ids["task_id"]).body
    assert body["userIdentity"] == {"autoUser": {"scope": "task", "elevationLevel": "nonadmin"}}
    assert body["containerSettings"]["workingDirectory"] == "taskWorkingDirectory"
    # A --user of its own would undo the mapping of the task user (and could ask for root).
    assert "--user" not in body["containerSettings"].get("containerRunOptions", "")
    rig.wait(handle)
    backend.cleanup(handle)
