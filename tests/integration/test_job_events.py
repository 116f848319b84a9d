"""Job events against Azurite: every stored state change has its event, published at least once, none without."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from azure.core.exceptions import ServiceRequestError

from hastegeo.events.publish import EventPublisher
from hastegeo.models.changes import StateChange
from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.pipeline.accept import parse_request
from hastegeo.pipeline.journal import PUBLISH_GRACE_S, JobJournal
from hastegeo.runtime import Runtime
from hastegeo.store import index
from hastegeo.store.jobs import JobStore
from hastegeo.store.queues import JobMessage
from hastegeo.telemetry.tracer import trace_id_of
from hastegeo.utils.errors import IllegalTransitionError
from tests.conftest import RuntimeFactory
from tests.support import events as event_queue
from tests.support.processors import ScriptProcessor
from tests.telemetry_support import recording

from .conftest import drive, put_input, request

pytestmark = pytest.mark.azurite


def run_one(runtime: Runtime, **fields: object) -> Job:
    runtime.deps.processors["artifacts"] = ScriptProcessor()
    put_input(runtime, "p1/a.txt", b"alpha")
    job = runtime.acceptor.accept(parse_request(request(**fields)), idempotency_key="key-1").job
    runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
    return drive(runtime, job.id)


def consumer(runtime: Runtime) -> event_queue.QueueClient:
    connection = runtime.settings.storage.connection_string
    assert connection is not None
    client = event_queue.events_client(connection)
    event_queue.drain(client)  # whatever earlier tests left
    return client


def test_every_state_change_of_a_job_is_one_cloudevent_in_order(make_runtime: RuntimeFactory) -> None:
    runtime = make_runtime()
    client = consumer(runtime)
    job = run_one(runtime, correlationId="order-4711")
    assert job.state is JobState.SUCCEEDED, job.reason
    events = event_queue.of_jobs(event_queue.drain(client), [job.id])[job.id]
    stored = runtime.store.get(job.id)
    assert [e["type"] for e in events] == [f"com.haste.job.{c.state.value}" for c in stored.state_changes]
    assert [c.state for c in stored.state_changes] == [
        JobState.QUEUED,
        JobState.SUBMITTING,
        JobState.RUNNING,
        JobState.POSTPROCESSING,
        JobState.SUCCEEDED,
    ]
    assert [e["data"]["sequence"] for e in events] == [1, 2, 3, 4, 5]
    assert [e["id"] for e in events] == [f"{job.id}.{n}" for n in range(1, 6)]
    # The ending write recorded its events with the job's cost totals marker, which names its active entry,
    # not in the document; the reconciler's fold of the marker deletes the entry (ADR 0051).
    assert stored.events_published == 3
    container = runtime.blobs.get_container_client(runtime.settings.storage.jobs_container)
    active = [b.name for b in container.list_blobs(name_starts_with=index.ACTIVE) if job.id in b.name]
    markers = list(container.list_blobs(name_starts_with="costs-pending/", include=["metadata"]))
    assert [(m.name.rpartition("/")[2], m.metadata["retire"]) for m in markers] == [(job.id, active[0])]
    assert runtime.journal.totals is not None
    runtime.journal.totals.fold()
    assert [b.name for b in container.list_blobs(name_starts_with=index.ACTIVE) if job.id in b.name] == []
    first, last = events[0], events[-1]
    assert (first["specversion"], first["datacontenttype"]) == ("1.0", "application/json")
    assert (first["subject"], first["source"]) == (job.id, "/haste-compute/projects/p1")
    assert first.get("traceparent") == stored.trace_parent  # the job's own trace, when it is traced
    data = last["data"]
    assert (data["projectId"], data["backend"], data["workload"]) == ("p1", "local", "artifacts")
    assert (data["correlationId"], data["idempotencyKey"]) == ("order-4711", "key-1")
    assert (data["state"], data["outputCount"]) == ("succeeded", len(stored.outputs))
    # The terminal event carries the job's cost (the local default rate: 0, and said so on the job).
    assert stored.cost is not None
    assert data["cost"] == {
        "amount": "0",
        "currency": "USD",
        "reason": None,
        "attributed": False,
    }
    assert "not measured" in (stored.cost.attempts[0].note or "")
    # The job ended with its events out: the reconciler's sweep has nothing left of it.
    assert runtime.journal.sweep() == []


def test_a_write_that_is_not_stored_publishes_nothing(make_runtime: RuntimeFactory) -> None:
    runtime = make_runtime()
    client = consumer(runtime)
    job = runtime.acceptor.accept(parse_request(request())).job

    def illegal(current: Job) -> Job:
        return runtime.deps.event(current, "jump", "test", state=JobState.SUCCEEDED)

    with pytest.raises(IllegalTransitionError):
        runtime.journal.update(job.id, illegal)
    events = event_queue.of_jobs(event_queue.drain(client), [job.id])[job.id]
    assert [e["type"] for e in events] == ["com.haste.job.queued"]


class Outage:
    """A publisher whose queue is down until :meth:`heal` (what a storage outage does to it)."""

    def __init__(self, real: EventPublisher) -> None:
        self.real, self.down, self.calls = real, True, 0

    def __call__(self, job: Job, changes: list[StateChange]) -> None:
        self.calls += 1
        if self.down:
            raise ServiceRequestError("connection refused")
        self.real(job, changes)


def test_events_lost_to_an_outage_are_published_by_the_sweep(make_runtime: RuntimeFactory) -> None:
    runtime = make_runtime()
    client = consumer(runtime)
    container = runtime.blobs.get_container_client(runtime.settings.storage.jobs_container)
    outage = Outage(EventPublisher(runtime.queues))
    journal = JobJournal(JobStore(container), clock=runtime.deps.clock, history_limit=50, publish=outage)
    job = runtime.acceptor.accept(parse_request(request())).job
    ended = journal.update(job.id, lambda j: runtime.deps.event(j, "cancelled by test", "test", JobState.CANCELLED))
    assert (ended.wrote, ended.job.state, outage.calls) == (True, JobState.CANCELLED, 1)
    assert ended.job.events_published == 1  # the queued event went out; the cancellation did not
    # The ended job keeps its active entry: the sweep still sees it.
    assert any(b.name.startswith(index.ACTIVE) for b in container.list_blobs(name_starts_with=index.ACTIVE))
    outage.down = False
    assert journal.sweep() == []  # within the grace, its writer may still be publishing
    assert event_queue.of_jobs(event_queue.drain(client), [job.id])[job.id][-1]["type"] == "com.haste.job.queued"
    later = ended.job.updated_at + timedelta(seconds=PUBLISH_GRACE_S + 1)
    assert journal.sweep(later) == []
    events = event_queue.of_jobs(event_queue.drain(client), [job.id])[job.id]
    assert [(e["id"], e["type"]) for e in events] == [(f"{job.id}.2", "com.haste.job.cancelled")]
    # Recorded as the ending writer records them: the active entry is gone, the sweep is done with the job.
    assert not list(container.list_blobs(name_starts_with=index.ACTIVE))
    assert journal.sweep(later) == []
    assert event_queue.of_jobs(event_queue.drain(client), [job.id])[job.id] == []


def test_a_write_of_an_ended_job_publishes_nothing_twice(make_runtime: RuntimeFactory) -> None:
    runtime = make_runtime()
    client = consumer(runtime)
    job = runtime.acceptor.accept(parse_request(request())).job
    ended = runtime.journal.update(job.id, lambda j: runtime.deps.event(j, "cancelled", "test", JobState.CANCELLED))
    assert ended.job.events_published < ended.job.state_changes[-1].seq  # recorded by its active entry going
    assert [e["type"] for e in event_queue.of_jobs(event_queue.drain(client), [job.id])[job.id]] == [
        "com.haste.job.queued",
        "com.haste.job.cancelled",
    ]
    # A later note on the ended job (a re-run links it, say) is a write like any other: nothing to publish.
    noted = runtime.journal.update(job.id, lambda j: runtime.deps.event(j, "a note on an ended job", "test"))
    assert noted.wrote
    assert event_queue.of_jobs(event_queue.drain(client), [job.id])[job.id] == []


def test_a_crash_between_store_and_publish_is_caught_up(make_runtime: RuntimeFactory) -> None:
    runtime = make_runtime()
    client = consumer(runtime)
    container = runtime.blobs.get_container_client(runtime.settings.storage.jobs_container)
    crashed = JobStore(container)  # stores the change, dies before it publishes
    job = runtime.acceptor.accept(parse_request(request())).job
    crashed.update(job.id, lambda j: runtime.deps.event(j, "submitting", "test", JobState.SUBMITTING))
    assert event_queue.of_jobs(event_queue.drain(client), [job.id])[job.id][-1]["data"]["sequence"] == 1
    stored = runtime.store.get(job.id)
    later = stored.updated_at + timedelta(seconds=PUBLISH_GRACE_S + 1)
    [item] = [u for u in runtime.journal.sweep(later) if u.job_id == job.id]
    assert item.state is JobState.SUBMITTING
    events = event_queue.of_jobs(event_queue.drain(client), [job.id])[job.id]
    assert [(e["data"]["sequence"], e["data"]["state"]) for e in events] == [(2, "submitting")]
    # The next write of the job publishes nothing twice.
    runtime.journal.update(job.id, lambda j: runtime.deps.event(j, "a note, no change of state", "test"))
    assert event_queue.of_jobs(event_queue.drain(client), [job.id])[job.id] == []


UPSTREAM_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
UPSTREAM_PARENT = f"00-{UPSTREAM_TRACE}-00f067aa0ba902b7-01"


def upstream_message(**fields: object) -> str:
    return json.dumps(request(**fields))


def test_an_upstream_request_joins_its_trace_and_its_correlation_id_returns_in_every_event(
    make_runtime: RuntimeFactory,
) -> None:
    runtime = make_runtime()
    client = consumer(runtime)
    text = upstream_message(traceparent=UPSTREAM_PARENT, tracestate="vendor=opaque", correlationId="order-9")
    with recording() as spans:
        job_id = runtime.upstream.handle(text, "message-1")
    assert job_id is not None
    job = runtime.store.get(job_id)
    assert trace_id_of(job.trace_parent) == UPSTREAM_TRACE  # the job's trace is the upstream one
    [root] = spans.named("jobs-requests")
    assert root.parent is not None
    assert format(root.parent.span_id, "016x") == "00f067aa0ba902b7"
    assert root.context.trace_state.get("vendor") == "opaque"
    assert job.correlation_id == "order-9"
    assert len(job.history) == 1  # nothing was dropped, nothing to note
    [event] = event_queue.of_jobs(event_queue.drain(client), [job_id])[job_id]
    assert event["data"]["correlationId"] == "order-9"
    assert event["data"]["idempotencyKey"] == "queue-message:message-1"
    assert event["traceparent"] == job.trace_parent


def test_bad_trace_context_is_dropped_with_a_note_never_refused(make_runtime: RuntimeFactory) -> None:
    runtime = make_runtime()
    job_id = runtime.upstream.handle(upstream_message(traceparent="00-nope", tracestate="x=1"), "message-2")
    assert job_id is not None
    job = runtime.store.get(job_id)
    assert trace_id_of(job.trace_parent) != UPSTREAM_TRACE
    assert [e.message for e in job.history[1:]] == [
        "the request's traceparent is not a W3C trace context; the job starts a trace of its own",
        "the request's tracestate came without a valid traceparent; it was dropped",
    ]
    # A bad correlation id is a field of the request like any other: refused with its path, and kept.
    assert runtime.upstream.handle(upstream_message(correlationId="has space"), "message-3") is None
