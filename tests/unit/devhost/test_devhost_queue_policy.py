"""The queue-trigger rules: poison decisions, batch refill, polling back-off, message encoding."""

from __future__ import annotations

import base64

import pytest

from hastegeo_dev.devhost.queue_policy import (
    OnFailure,
    OnReceive,
    decode_body,
    encode_body,
    fetch_size,
    on_failure,
    on_receive,
    poison_queue_name,
    poll_delay,
    renewal_interval,
)


def test_poison_decisions_follow_max_dequeue_count() -> None:
    assert [on_failure(n, 3) for n in (1, 2, 3, 4)] == [
        OnFailure.RETRY,
        OnFailure.RETRY,
        OnFailure.POISON,
        OnFailure.POISON,
    ]
    assert [on_receive(n, 3) for n in (1, 3, 4)] == [OnReceive.PROCESS, OnReceive.PROCESS, OnReceive.POISON]
    assert on_failure(1, 1) is OnFailure.POISON
    assert poison_queue_name("jobs-submit") == "jobs-submit-poison"


def test_a_new_batch_is_fetched_once_in_flight_work_drops_to_the_threshold() -> None:
    assert fetch_size(0, 16, 8) == 16
    assert fetch_size(8, 16, 8) == 16
    assert fetch_size(9, 16, 8) == 0
    assert fetch_size(0, 1, 0) == 1
    assert fetch_size(1, 1, 0) == 0


def test_polling_back_off_doubles_from_100ms_to_the_maximum() -> None:
    assert [poll_delay(n, 1.0) for n in range(6)] == [0.0, 0.1, 0.2, 0.4, 0.8, 1.0]
    assert poll_delay(10_000, 60.0) == 60.0
    assert poll_delay(3, 0.05) == 0.05  # a maximum below the minimum wins


def test_leases_are_renewed_at_half_time() -> None:
    assert renewal_interval(120) == 60


def test_encoding_none_passes_text_through() -> None:
    assert decode_body('{"jobId": "é"}', "none") == '{"jobId": "é"}'.encode()
    assert encode_body({"jobId": "j1"}, "none") == '{"jobId": "j1"}'
    assert encode_body(b"raw", "none") == "raw"


def test_encoding_base64_round_trips_and_rejects_garbage() -> None:
    text = encode_body("hello", "base64")
    assert text == base64.b64encode(b"hello").decode()
    assert decode_body(text, "base64") == b"hello"
    with pytest.raises(ValueError, match="base64"):
        decode_body("{not base64}", "base64")
