"""The reason a job that ran out of time ends with (pure): what did not happen, the limit it had,
and the error it was stuck on. Expiring a stored job: tests/integration/test_reconcile.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.pipeline.deadlines import EXPIRY_REASONS, expiry_reason
from tests.support.jobs import job_document

CREATED = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def job(state: JobState, *, deadline_s: int, started_s: int | None = None, last_error: str | None = None) -> Job:
    return job_document(
        CREATED,
        state,
        started_at=None if started_s is None else CREATED + timedelta(seconds=started_s),
        deadline_at=CREATED + timedelta(seconds=deadline_s),
        last_error=last_error,
    )


def test_every_state_a_job_can_expire_in_has_its_own_reason() -> None:
    unfinished = {state for state in JobState if not state.terminal}
    assert set(EXPIRY_REASONS) == unfinished
    for state in unfinished:
        assert expiry_reason(job(state, deadline_s=90)) == f"{EXPIRY_REASONS[state]} (90s)"
    assert "submitted" in expiry_reason(job(JobState.QUEUED, deadline_s=90))
    assert "finish" in expiry_reason(job(JobState.RUNNING, deadline_s=90))


def test_the_limit_is_counted_from_the_start_once_the_job_started() -> None:
    """A run deadline applies from the start: the time spent queued is not part of it."""
    assert expiry_reason(job(JobState.RUNNING, deadline_s=3700, started_s=100)) == (
        f"{EXPIRY_REASONS[JobState.RUNNING]} (3600s)"
    )
    assert expiry_reason(job(JobState.QUEUED, deadline_s=3700)).endswith("(3700s)")


def test_a_job_stuck_on_an_error_says_which_and_the_error_is_cleaned() -> None:
    stuck = job(JobState.SUBMITTING, deadline_s=60, last_error="ServerBusy:\n  see https://x/y?sig=abc&se=1")
    assert expiry_reason(stuck) == (
        f"{EXPIRY_REASONS[JobState.SUBMITTING]} (60s); the last attempt failed: "
        "ServerBusy: see https://x/y?sig=[REDACTED]&se=1"
    )
    assert "last attempt" not in expiry_reason(job(JobState.SUBMITTING, deadline_s=60, last_error=""))
