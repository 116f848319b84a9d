"""The traceparent travels in the pointer messages, readable by the previous version and without it."""

from __future__ import annotations

import json

from opentelemetry.trace import SpanKind
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from hastegeo.store.queues import JobMessage
from hastegeo.telemetry.tracer import TRACER, current_traceparent, trace_id_of
from tests.telemetry_support import recording

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


class PreviousJobMessage(BaseModel):
    """The message model as the previous version declares it (no traceparent)."""

    model_config = ConfigDict(populate_by_name=True, alias_generator=to_camel, extra="ignore", frozen=True)
    job_id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,62}$")
    kind: str
    attempt: int = Field(0, ge=0)


def test_outside_a_trace_the_message_is_what_it_always_was() -> None:
    wire = json.loads(JobMessage(job_id="j1", kind="poll", poll_seq=3).encode())
    assert "traceparent" not in wire
    assert (wire["jobId"], wire["kind"], wire["attempt"]) == ("j1", "poll", 3)


def test_inside_a_span_the_message_carries_its_traceparent_and_the_previous_version_reads_it() -> None:
    with recording(), TRACER.start_as_current_span("POST /api/jobs", kind=SpanKind.SERVER):
        expected = current_traceparent()
        text = JobMessage(job_id="j1", kind="submit").encode()
    assert expected is not None
    assert json.loads(text)["traceparent"] == expected
    assert JobMessage.model_validate_json(text).traceparent == expected
    old = PreviousJobMessage.model_validate_json(text)
    assert (old.job_id, old.kind, old.attempt) == ("j1", "submit", 0)


def test_a_message_of_the_previous_version_is_read() -> None:
    message = JobMessage.model_validate_json('{"jobId": "j1", "kind": "poll", "attempt": 2}')
    assert (message.traceparent, message.poll_seq) == (None, 2)


def test_a_set_traceparent_is_kept_and_a_malformed_one_costs_only_the_link() -> None:
    assert JobMessage(job_id="j1", kind="poll", traceparent=TRACEPARENT).encode().count(TRACEPARENT) == 1
    for bad in ("00-xyz", 7, "00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01\n", ""):
        raw = json.dumps({"jobId": "j1", "kind": "poll", "traceparent": bad})
        message = JobMessage.model_validate_json(raw)
        assert (message.job_id, message.traceparent) == ("j1", None)


def test_trace_ids_are_read_from_traceparents() -> None:
    assert trace_id_of(TRACEPARENT) == "0af7651916cd43dd8448eb211c80319c"
    assert trace_id_of("garbage") is None
    assert trace_id_of(None) is None
