"""A state change as a CloudEvent: the attributes the contract promises, nothing secret, small enough for a queue."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from hastegeo.events.cloudevent import build, event_type
from hastegeo.models.changes import StateChange, mark_published, pending, stamp
from hastegeo.models.history import make_event
from hastegeo.models.job import Job, Submitter
from hastegeo.models.states import JobState

T0 = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def job(**fields: object) -> Job:
    base: dict[str, object] = {
        "id": "j1",
        "project_id": "p1",
        "workload": "artifacts",
        "state": JobState.QUEUED,
        "requested_backend": "auto",
        "backend": "local",
        "created_at": T0,
        "updated_at": T0,
        "deadline_at": T0 + timedelta(hours=1),
        "history": [make_event(T0, JobState.QUEUED, "accepted", "api")],
    }
    return Job.model_validate({**base, **fields})


def moved(current: Job, *states: JobState, at: datetime = T0) -> Job:
    events = [make_event(at + timedelta(seconds=i + 1), s, f"to {s.value}", "test") for i, s in enumerate(states)]
    return current.model_copy(update={"state": states[-1], "history": [*current.history, *events]})


def test_a_new_job_is_change_one_and_each_state_it_enters_the_next() -> None:
    created = stamp(None, job())
    assert [(c.seq, c.state) for c in created.state_changes] == [(1, JobState.QUEUED)]
    running = stamp(created, moved(created, JobState.SUBMITTING, JobState.RUNNING))  # two states, one write
    assert [(c.seq, c.state) for c in running.state_changes] == [
        (1, JobState.QUEUED),
        (2, JobState.SUBMITTING),
        (3, JobState.RUNNING),
    ]
    assert running.state_changes[2].at == T0 + timedelta(seconds=2)  # the time of its history event
    noted = running.model_copy(update={"history": [*running.history, make_event(T0, JobState.RUNNING, "x", "poll")]})
    assert stamp(running, noted).state_changes == running.state_changes  # a note is not a change


def test_late_progress_lines_are_not_a_move_back() -> None:
    post = stamp(None, job())
    post = stamp(post, moved(post, JobState.SUBMITTING, JobState.RUNNING, JobState.POSTPROCESSING))
    late = [*post.history[:3], make_event(T0, JobState.RUNNING, "step 3 of 3", "workload"), *post.history[3:]]
    ended = moved(post.model_copy(update={"history": late}), JobState.SUCCEEDED)
    assert [c.state for c in stamp(post, ended).state_changes][-2:] == [JobState.POSTPROCESSING, JobState.SUCCEEDED]


def test_pending_and_published() -> None:
    created = stamp(None, job())
    assert [c.seq for c in pending(created)] == [1]
    published = mark_published(created, 1)
    assert published is not None
    assert pending(published) == []
    assert mark_published(published, 1) is None


def test_the_event_has_every_attribute_of_the_contract() -> None:
    stored = job(
        state=JobState.FAILED,
        reason="upload to https://acct.blob.core.windows.net/c/b?sv=2024&sig=SECRETSIG failed",
        finished_at=T0,
        submitted_by=Submitter(name="ana", object_id="oid-1"),
        correlation_id="order-1",
        request_key="key-1",
        trace_parent="00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    )
    event = build(stored, StateChange(seq=4, state=JobState.FAILED, at=T0))
    assert {k: event[k] for k in ("specversion", "id", "source", "type", "subject", "time", "datacontenttype")} == {
        "specversion": "1.0",
        "id": "j1.4",
        "source": "/haste-compute/projects/p1",
        "type": "com.haste.job.failed",
        "subject": "j1",
        "time": T0.isoformat(),
        "datacontenttype": "application/json",
    }
    assert event["traceparent"] == stored.trace_parent
    data = event["data"]
    assert data["sequence"] == 4
    assert data["state"] == "failed"
    assert data["submittedBy"] == {"name": "ana", "objectId": "oid-1"}
    assert (data["correlationId"], data["idempotencyKey"]) == ("order-1", "key-1")
    text = json.dumps(event)
    assert "SECRETSIG" not in text
    assert "sig=[REDACTED]" in data["reason"]
    assert len(text) < 4096


def test_types_name_the_state() -> None:
    assert [event_type(s) for s in (JobState.SUCCEEDED, JobState.CANCEL_REQUESTED)] == [
        "com.haste.job.succeeded",
        "com.haste.job.cancel_requested",
    ]
