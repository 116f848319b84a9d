"""Telemetry of the pipeline's steps against Azurite and the local backend: one trace per job, metrics, quiet logs.

Messages are read back from what the steps really sent (the queue sender's text), so
the ``traceparent`` a step continues is the one that travelled in the message.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta

import pytest
from opentelemetry.trace import SpanKind, StatusCode

from hastegeo.models.states import JobState
from hastegeo.pipeline.accept import REENQUEUE_AFTER_S, parse_request
from hastegeo.pipeline.reconcile import CHAIN_GRACE_S
from hastegeo.runtime import Runtime
from hastegeo.store.queues import POLL_QUEUE, SUBMIT_QUEUE, JobMessage
from hastegeo.telemetry.tracer import TRACER, trace_id_of
from tests.conftest import RuntimeFactory
from tests.support.clock import Clock
from tests.support.processors import FAIL, ScriptProcessor
from tests.support.runtime import development_runtime
from tests.telemetry_support import recording

from .conftest import drive, put_input, request

pytestmark = pytest.mark.azurite
LOCAL = {"backend": "local", "workload": "artifacts"}


def sent_messages(runtime: Runtime) -> list[tuple[str, JobMessage]]:
    """Every message the runtime's sender sends from now on, parsed from the text that went to the queue."""
    sent: list[tuple[str, JobMessage]] = []
    original = runtime.queues.send_text

    def send_text(queue: str, text: str, delay_s: float = 0) -> None:
        sent.append((queue, JobMessage.model_validate_json(text)))
        original(queue, text, delay_s)

    runtime.queues.send_text = send_text  # type: ignore[method-assign]
    return sent


def accept_in_request_span(runtime: Runtime, **fields: object) -> str:
    with TRACER.start_as_current_span("POST /api/jobs", kind=SpanKind.SERVER):
        return runtime.acceptor.accept(parse_request(request(**fields))).job.id


def test_a_job_is_one_trace_from_its_request_to_its_success_and_is_counted(make_runtime: RuntimeFactory) -> None:
    runtime = make_runtime()
    put_input(runtime, "p1/a.txt", b"alpha")
    sent = sent_messages(runtime)
    with recording() as seen:
        job_id = accept_in_request_span(runtime)
        submit_message = next(m for q, m in sent if q == SUBMIT_QUEUE)
        runtime.submit.handle(submit_message)
        poll_message = next(m for q, m in sent if q == POLL_QUEUE)
        runtime.poll.handle(poll_message)
        job = drive(runtime, job_id)  # further polls without a traceparent: the job's own trace is found
    assert job.state is JobState.SUCCEEDED, job.reason

    request_span = seen.named("POST /api/jobs")[0]
    trace_id = request_span.context.trace_id
    assert submit_message.traceparent is not None
    assert trace_id_of(submit_message.traceparent) == format(trace_id, "032x")
    assert job.trace_parent == submit_message.traceparent  # the job remembers the trace it was accepted in
    steps = [s for s in seen.spans if s.instrumentation_scope and s.instrumentation_scope.name == "hastegeo"]
    assert {s.name for s in steps} >= {"POST /api/jobs", "submit", "poll", "postprocess"}
    assert {s.context.trace_id for s in steps} == {trace_id}
    submit_span = seen.named("submit")[0]
    assert submit_span.parent is not None
    assert submit_span.parent.span_id == request_span.context.span_id
    first_poll = next(s for s in seen.named("poll") if s.parent and s.parent.span_id == submit_span.context.span_id)
    assert first_poll.attributes is not None
    postprocess = seen.named("postprocess")[0]
    assert postprocess.parent is not None
    assert postprocess.parent.span_id in {s.context.span_id for s in seen.named("poll")}
    for span in steps:
        attributes = dict(span.attributes or {})
        assert attributes["haste.job_id"] == job_id, span.name
        assert (attributes["haste.project"], attributes["haste.workload"]) == ("p1", "artifacts"), span.name
        assert attributes["haste.backend"] == "local", span.name
    assert dict(submit_span.attributes or {})["haste.attempt"] == 1
    assert dict(postprocess.attributes or {})["haste.state"] == "succeeded"  # the last step holds the final state

    assert seen.counted("haste.jobs.accepted", **LOCAL) == 1
    assert seen.counted("haste.jobs.started", **LOCAL) == 1
    assert seen.counted("haste.jobs.succeeded", **LOCAL) == 1
    assert seen.counted("haste.jobs.failed") == 0
    for histogram in ("haste.job.queue_wait", "haste.job.run_time", "haste.job.postprocess_time", "haste.job.polls"):
        assert seen.counted(histogram, **LOCAL) == 1, histogram


def test_each_failure_is_counted_by_its_reason_class_and_its_span_says_why(make_runtime: RuntimeFactory) -> None:
    runtime = make_runtime(HASTE_QUEUED_DEADLINE_S="1")
    runtime.deps.processors["artifacts"] = ScriptProcessor()
    with recording() as seen:
        failing = accept_in_request_span(runtime, inputs=[], parameters={"script": FAIL})
        runtime.submit.handle(JobMessage(job_id=failing, kind="submit"))
        assert drive(runtime, failing).state is JobState.FAILED

        poisoned = accept_in_request_span(runtime, inputs=[])
        runtime.poison.handle(JobMessage(job_id=poisoned, kind="submit").encode(), SUBMIT_QUEUE)

        late = accept_in_request_span(runtime, inputs=[])
        time.sleep(1.2)  # past the queued deadline of 1 s
        runtime.submit.handle(JobMessage(job_id=late, kind="submit"))
        assert runtime.store.get(late).state is JobState.FAILED

    classes = {"workload": failing, "poison": poisoned, "deadline": late}
    for reason_class, job_id in classes.items():
        assert seen.counted("haste.jobs.failed", backend="local", reason_class=reason_class) == 1, reason_class
        failed = [
            s
            for s in seen.spans
            if s.status.status_code is StatusCode.ERROR and dict(s.attributes or {}).get("haste.job_id") == job_id
        ]
        assert len(failed) == 1, reason_class
        attributes = dict(failed[0].attributes or {})
        assert attributes["haste.reason_class"] == reason_class
        assert attributes["haste.reason"] == runtime.store.get(job_id).reason
        assert failed[0].status.description == runtime.store.get(job_id).reason
    assert "code 3" in str(runtime.store.get(failing).reason)
    assert seen.counted("haste.jobs.failed") == 3


def test_the_reconciler_keeps_jobs_in_their_traces_counts_its_findings_and_logs_a_repeat_once(
    make_runtime: RuntimeFactory, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    runtime = development_runtime(make_runtime().settings, clock=clock)
    runtime.deps.processors["artifacts"] = ScriptProcessor()
    sent = sent_messages(runtime)
    caplog.set_level(logging.INFO, logger="hastegeo.pipeline.reconcile")
    with recording() as seen:
        running = accept_in_request_span(runtime, inputs=[], parameters={"sleep": 30})
        runtime.submit.handle(JobMessage(job_id=running, kind="submit"))
        stuck = accept_in_request_span(runtime, inputs=[])
        clock.now += timedelta(seconds=max(REENQUEUE_AFTER_S, CHAIN_GRACE_S + 60) + 1)  # both quiet for long
        del sent[:]
        for _ in range(3):
            runtime.reconcile.run()
        rearmed = [m for q, m in sent if q == POLL_QUEUE and m.job_id == running]
        resubmitted = [m for q, m in sent if q == SUBMIT_QUEUE and m.job_id == stuck]
        runtime.submit.handle(resubmitted[-1])  # no traceparent: the step finds the job's own trace
    assert len(rearmed) == 3
    assert {m.traceparent for m in rearmed} == {runtime.store.get(running).trace_parent}
    assert [m.traceparent for m in resubmitted] == [None, None, None]  # not the reconciler's trace
    request_of_stuck = next(
        s for s in seen.named("POST /api/jobs") if dict(s.attributes or {}).get("haste.job_id") == stuck
    )
    submit_of_stuck = [s for s in seen.named("submit") if dict(s.attributes or {}).get("haste.job_id") == stuck]
    assert [s.context.trace_id for s in submit_of_stuck] == [request_of_stuck.context.trace_id]
    assert len(seen.named("reconcile")) == 3
    assert seen.counted("haste.reconcile.findings", finding="rearmed") == 3
    assert seen.counted("haste.reconcile.findings", finding="resubmitted") == 3
    assert seen.named("expire") == []
    summaries = [r for r in caplog.records if r.getMessage().startswith("reconcile at ")]
    assert len(summaries) == 1  # the same findings three runs in a row: one line
    runtime.cancel.cancel(running)


def test_a_job_the_reconciler_expires_fails_in_its_own_trace(make_runtime: RuntimeFactory) -> None:
    clock = Clock()
    runtime = development_runtime(make_runtime().settings, clock=clock)
    runtime.deps.processors["artifacts"] = ScriptProcessor()
    with recording() as seen:
        late = accept_in_request_span(runtime, inputs=[])
        clock.now += timedelta(seconds=runtime.settings.pipeline.queued_deadline_s + 1)
        report = runtime.reconcile.run()
    assert report.expired == [late]
    (expired,) = seen.named("expire")
    (request_span,) = seen.named("POST /api/jobs")
    assert expired.context.trace_id == request_span.context.trace_id
    assert expired.status.status_code is StatusCode.ERROR
    attributes = dict(expired.attributes or {})
    assert (attributes["haste.reason_class"], attributes["haste.state"]) == ("deadline", "failed")
    (sweep,) = seen.named("reconcile")
    assert "haste.job_id" not in dict(sweep.attributes or {})  # the sweep's own span names no job
    assert dict(sweep.attributes or {})["haste.reconcile.expired"] == 1
    assert seen.counted("haste.jobs.failed", reason_class="deadline") == 1
    assert seen.counted("haste.reconcile.findings", finding="expired") == 1
