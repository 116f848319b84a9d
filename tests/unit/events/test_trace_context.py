"""W3C trace context from an upstream request: valid values kept, bad ones dropped with a note."""

from __future__ import annotations

import pytest

from hastegeo.events.trace_context import check, of_message, valid_traceparent, valid_tracestate, without_envelope

GOOD = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@pytest.mark.parametrize(
    "value",
    [
        GOOD,
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-future-fields",  # a later version may add fields
    ],
)
def test_valid_traceparents(value: str) -> None:
    assert valid_traceparent(value)


@pytest.mark.parametrize(
    "value",
    [
        "",
        "garbage",
        GOOD.upper(),  # lowercase hex only
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  # version ff is invalid
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  # all-zero trace id
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  # all-zero parent id
        GOOD + "-extra",  # version 00 has four fields
        GOOD[:-1],
        42,
        None,
    ],
)
def test_invalid_traceparents(value: object) -> None:
    assert not valid_traceparent(value)


def test_tracestate_rules() -> None:
    assert valid_tracestate("congo=t61rcWkgMzE,rojo=00f067aa0ba902b7")
    assert valid_tracestate("tenant@vendor=x, ,other=y")  # empty members are allowed
    assert not valid_tracestate("Upper=1")
    assert not valid_tracestate("a=1,a=2")  # a key at most once
    assert not valid_tracestate("novalue")
    assert not valid_tracestate(",".join(f"k{i}=v" for i in range(33)))
    assert not valid_tracestate("k=" + "v" * 600)


def test_check_keeps_what_is_valid_and_says_what_was_dropped() -> None:
    kept = check(GOOD, "a=1")
    assert (kept.traceparent, kept.tracestate, kept.notes) == (GOOD, "a=1", ())
    assert check(None, None).notes == ()
    bad_parent = check("not-a-trace", "a=1")
    assert (bad_parent.traceparent, bad_parent.tracestate) == (None, None)
    assert bad_parent.notes == (
        "the request's traceparent is not a W3C trace context; the job starts a trace of its own",
        "the request's tracestate came without a valid traceparent; it was dropped",
    )
    bad_state = check(GOOD, "BAD STATE")
    assert (bad_state.traceparent, bad_state.tracestate) == (GOOD, None)
    assert bad_state.notes == ("the request's tracestate is not a W3C tracestate; it was dropped",)
    assert check(None, "a=1").notes == ("the request's tracestate came without a valid traceparent; it was dropped",)


def test_the_envelope_is_read_from_the_message_and_removed_from_the_request() -> None:
    text = f'{{"workload": "artifacts", "projectId": "p1", "traceparent": "{GOOD}", "tracestate": "a=1"}}'
    assert of_message(text).traceparent == GOOD
    assert of_message("not json").traceparent is None
    assert of_message("[1, 2]").notes == ()
    body = {"workload": "artifacts", "traceparent": GOOD, "tracestate": "a=1", "correlationId": "c"}
    assert without_envelope(body) == {"workload": "artifacts", "correlationId": "c"}
    assert without_envelope([1]) == [1]
