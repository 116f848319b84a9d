"""The capacity decision and each provider's reading of why a job waits: pure, on real SDK models."""

from __future__ import annotations

from types import SimpleNamespace

from hastegeo.compute.azure_batch.capacity import pool_missing, pool_view, pool_wait
from hastegeo.compute.azure_ml.capacity import run_wait
from hastegeo.compute.capacity import CapacityWait, duration_text, verdict


def batch_pool(**fields: object) -> SimpleNamespace:
    """A pool with the attributes of ``azure.batch.models.BatchPool`` (the SDK's own: tests/integration)."""
    raw = fields.pop("resize_errors", [])
    errors = [SimpleNamespace(**error) for error in raw] if isinstance(raw, list) else []
    body = {"allocation_state": "steady", "current_dedicated_nodes": 0, "current_low_priority_nodes": 0,
            "target_dedicated_nodes": 2, "target_low_priority_nodes": 0, "enable_auto_scale": False}  # fmt: skip
    body.update(fields)
    return SimpleNamespace(resize_errors=errors, **body)


QUOTA = {"code": "AccountCoreQuotaReached", "message": "The specified account has reached VM core quota.\nRequestId:1"}


def test_quota_on_a_pool_without_nodes_cannot_clear() -> None:
    wait = pool_wait(pool_view(batch_pool(resize_errors=[QUOTA]), "gpu"))
    assert wait == CapacityWait(
        reason="pool gpu: AccountCoreQuotaReached: The specified account has reached VM core quota.", blocked=True
    )


def test_quota_on_a_pool_with_busy_nodes_still_clears() -> None:
    wait = pool_wait(pool_view(batch_pool(resize_errors=[QUOTA], current_dedicated_nodes=1), "gpu"))
    assert not wait.blocked
    assert wait.reason.endswith("(it has 1 node, all busy)")


def test_allocation_failure_may_clear_and_a_zero_sized_pool_cannot() -> None:
    failed = pool_wait(pool_view(batch_pool(resize_errors=[{"code": "AllocationFailed", "message": "no VMs"}]), "gpu"))
    assert failed == CapacityWait(reason="pool gpu: AllocationFailed: no VMs")
    zero = pool_wait(pool_view(batch_pool(target_dedicated_nodes=0), "gpu"))
    assert zero == CapacityWait(reason="pool gpu is sized to zero nodes and does not autoscale", blocked=True)
    autoscaled = pool_wait(pool_view(batch_pool(target_dedicated_nodes=0, enable_auto_scale=True), "gpu"))
    assert not autoscaled.blocked
    growing = pool_wait(pool_view(batch_pool(allocation_state="resizing"), "gpu"))
    assert growing == CapacityWait(reason="pool gpu is allocating nodes (0 of 2)")
    busy = pool_wait(pool_view(batch_pool(current_dedicated_nodes=2), "gpu"))
    assert busy == CapacityWait(reason="pool gpu: all 2 nodes busy")
    assert pool_missing("gpu") == CapacityWait(reason="pool gpu does not exist", blocked=True)


class _Error:
    def __init__(self, code: str, message: str) -> None:
        self.code, self.message = code, message


class _Details:
    def __init__(self, error: _Error | None = None, warnings: list[object] | None = None) -> None:
        self.error = type("Root", (), {"error": error})() if error else None
        self.warnings = warnings or []


def test_azure_ml_run_details_say_why_a_job_is_queued() -> None:
    quota = run_wait(_Details(_Error("QuotaExceeded", "Not enough quota for Standard_NC6.")), "gpu-cluster")
    assert quota == CapacityWait(reason="compute gpu-cluster: QuotaExceeded: Not enough quota for Standard_NC6.",
                                 blocked=True)  # fmt: skip
    warning = type("W", (), {"source": "Scheduler", "message": "Waiting for 2 nodes"})()
    assert run_wait(_Details(warnings=[warning]), "cpu") == CapacityWait(reason="compute cpu: Waiting for 2 nodes")
    assert run_wait(_Details(), "cpu") is None


def test_verdict_waits_moves_on_over_the_limit_and_at_once_when_blocked() -> None:
    waiting = CapacityWait(reason="pool gpu: AllocationFailed: no VMs")
    assert verdict("azure_batch", 600, 1800, waiting) is None
    assert verdict("azure_batch", 1860, 1800, waiting) == (
        "waiting for compute on azure_batch for 31 min: pool gpu: AllocationFailed: no VMs "
        "(over the 30 min queue limit)"
    )
    assert verdict("azure_batch", 1860, 1800, None) == (
        "waiting for compute on azure_batch for 31 min: the provider has not started it yet "
        "(over the 30 min queue limit)"
    )
    blocked = CapacityWait(reason="pool gpu does not exist", blocked=True)
    assert verdict("azure_batch", 5, 1800, blocked) == (
        "waiting for compute on azure_batch for 5 s: pool gpu does not exist (this cannot clear by itself)"
    )
    assert [duration_text(s) for s in (0, 119, 120, 7199, 7200, 7500)] == ["0 s", "119 s", "2 min", "119 min",
                                                                           "2 h", "2 h 5 min"]  # fmt: skip


def test_the_board_counts_waits_per_backend_and_keeps_the_last_reason() -> None:
    from datetime import UTC, datetime, timedelta

    from hastegeo.models.job import Job
    from hastegeo.models.states import JobState
    from hastegeo.pipeline.admission.board import BackendQueue, summarize

    now = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)

    def job(n: int, state: JobState, backend: str, minutes_ago: int, reason: str | None = None) -> Job:
        at = now - timedelta(minutes=minutes_ago)
        return Job(id=f"j{n}", project_id="p1", workload="artifacts", state=state, requested_backend="auto",
                   backend=backend, created_at=at, updated_at=at, started_at=at, deadline_at=now,
                   waiting_for_compute=reason)  # fmt: skip

    jobs = [
        job(1, JobState.QUEUED, "local", 5),
        job(2, JobState.RUNNING, "local", 1),  # running: not waiting
        job(3, JobState.RUNNING, "azure_batch", 30, "pool gpu: AllocationFailed: no VMs"),
        job(4, JobState.RUNNING, "azure_batch", 2, "pool gpu is allocating nodes (0 of 2)"),
    ]
    before = {"azure_ml": BackendQueue(last_reason="compute gpu: QuotaExceeded: none", last_reason_at=now)}
    board = summarize(jobs, now, before)
    assert board["local"] == BackendQueue(waiting=1, oldest_wait_s=300.0)
    assert board["azure_batch"].waiting == 2
    assert board["azure_batch"].oldest_wait_s == 1800.0
    assert board["azure_batch"].last_reason == "pool gpu is allocating nodes (0 of 2)"  # the newest
    assert board["azure_ml"] == before["azure_ml"]  # nothing waits there now; its last reason stays
