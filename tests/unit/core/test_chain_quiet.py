"""When the reconciler takes a job's poll chain for lost (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hastegeo.models.job import Job, QueuedMessage
from hastegeo.models.states import JobState
from hastegeo.pipeline.reconcile import CHAIN_GRACE_S, chain_quiet

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def running(due_in_s: float | None) -> Job:
    return Job(
        id="j1",
        project_id="p1",
        workload="artifacts",
        state=JobState.RUNNING,
        requested_backend="local",
        backend="local",
        created_at=NOW,
        updated_at=NOW,
        deadline_at=NOW + timedelta(days=1),
        poll_message=QueuedMessage(id="m1", receipt="r1"),
        poll_due_at=None if due_in_s is None else NOW + timedelta(seconds=due_in_s),
    )


def test_a_chain_is_left_alone_until_its_message_is_overdue_past_the_grace() -> None:
    assert not chain_quiet(running(30), NOW)  # due later
    assert not chain_quiet(running(0), NOW)
    assert not chain_quiet(running(-CHAIN_GRACE_S), NOW)  # overdue by the grace exactly
    assert chain_quiet(running(-CHAIN_GRACE_S - 1), NOW)


def test_a_record_without_a_due_time_is_rearmed_as_before() -> None:
    """Written before the due time was kept, or by the release before it (which drops the unknown field)."""
    assert chain_quiet(running(None), NOW)
    assert chain_quiet(running(None).model_copy(update={"poll_message": None}), NOW)


def test_the_due_time_is_bookkeeping_clients_never_see() -> None:
    job = running(30)
    assert job.model_dump(by_alias=True, mode="json")["pollDueAt"] == "2026-12-02T12:00:30Z"
    assert "pollDueAt" not in job.api_view()
    assert Job.model_validate({**job.model_dump(by_alias=True), "pollDueAt": None}).poll_due_at is None
