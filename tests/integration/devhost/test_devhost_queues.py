"""Queue triggers driven from Azurite per host.json: delete, retry, poison, batches, back-off, leases, stop."""

from __future__ import annotations

import base64
import itertools
import json
import time
from collections.abc import Callable

import pytest
from azure.storage.queue import QueueClient, QueueServiceClient
from devhost_helpers import Running

from hastegeo.store.queues import QueueSender
from hastegeo.store.sends import listen_for_sends
from hastegeo_dev.devhost.azurite import Azurite

pytestmark = pytest.mark.azurite


def _visible(client: QueueClient) -> list[str]:
    return [m.content for m in client.peek_messages(max_messages=32)]


def _eventually(predicate: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def _prefill(azurite: Azurite, bodies: list[dict[str, object]]) -> Callable[[str], None]:
    def fill(prefix: str) -> None:
        with QueueClient.from_connection_string(azurite.connection_string, f"{prefix}-work") as client:
            client.create_queue()
            for body in bodies:
                client.send_message(json.dumps(body))

    return fill


def _count(client: QueueClient) -> int:
    return int(client.get_queue_properties().approximate_message_count or 0)


def test_a_message_is_processed_once_and_deleted(start_host: Callable[..., Running]) -> None:
    running = start_host()
    running.send_work("ok-1", note="é")
    assert running.recorder.wait_for(lambda r: len(r.of("ok-1")) == 1, timeout=5)
    (call,) = running.recorder.of("ok-1")
    assert call.dequeue_count == 1
    assert json.loads(call.body) == {"key": "ok-1", "note": "é"}
    assert call.meta["id"]
    assert call.meta["pop_receipt"]
    assert call.meta["insertion_time"] < call.meta["expiration_time"]
    assert _eventually(lambda: _count(running.work) == 0, timeout=3)


def test_base64_encoding_decodes_bodies_and_poisons_invalid_ones(start_host: Callable[..., Running]) -> None:
    running = start_host(queues={"messageEncoding": "base64", "maxDequeueCount": 1})
    running.work.send_message(base64.b64encode(json.dumps({"key": "b64"}).encode()).decode())
    running.work.send_message("{not base64}")
    running.host.wake(f"{running.prefix}-work")
    assert running.recorder.wait_for(lambda r: len(r.of("b64")) == 1, timeout=5)
    poison = running.queue(f"{running.prefix}-work-poison")
    assert _eventually(lambda: _visible(poison) == ["{not base64}"], timeout=5)


def test_a_failing_message_is_retried_after_the_visibility_timeout_then_poisoned(
    start_host: Callable[..., Running],
) -> None:
    running = start_host(queues={"maxDequeueCount": 3, "visibilityTimeout": "00:00:01"})
    running.send_work("bad-1", fail=True)
    poison = running.queue(f"{running.prefix}-work-poison")
    assert _eventually(lambda: len(_visible(poison)) == 1, timeout=10)
    calls = running.recorder.of("bad-1")
    assert [c.dequeue_count for c in calls] == [1, 2, 3]
    gaps = [later.at - earlier.at for earlier, later in itertools.pairwise(calls)]
    assert all(gap >= 0.9 for gap in gaps), gaps
    assert json.loads(_visible(poison)[0]) == {"key": "bad-1", "fail": True}  # the original text, unchanged
    assert _eventually(lambda: _count(running.work) == 0, timeout=3)


def test_a_message_already_over_the_dequeue_limit_goes_to_poison_without_running(
    start_host: Callable[..., Running], azurite: Azurite
) -> None:
    def over_dequeued(prefix: str) -> None:
        _prefill(azurite, [{"key": "stale-1"}])(prefix)
        with QueueClient.from_connection_string(azurite.connection_string, f"{prefix}-work") as client:
            for _ in range(3):  # each receive counts a dequeue; release it again at once
                (message,) = list(client.receive_messages(max_messages=1, visibility_timeout=30))
                client.update_message(message, visibility_timeout=0)

    running = start_host(queues={"maxDequeueCount": 2}, before_start=over_dequeued)
    poison = running.queue(f"{running.prefix}-work-poison")
    assert _eventually(lambda: len(_visible(poison)) == 1, timeout=5)
    assert running.recorder.of("stale-1") == []
    assert _eventually(lambda: _count(running.work) == 0, timeout=3)


def test_a_batch_runs_concurrently_up_to_batch_size(start_host: Callable[..., Running], azurite: Azurite) -> None:
    bodies: list[dict[str, object]] = [{"key": f"b{i}", "sleep": 0.4} for i in range(8)]
    started = time.monotonic()
    running = start_host(queues={"batchSize": 4, "newBatchThreshold": 0}, before_start=_prefill(azurite, bodies))
    assert running.recorder.wait_for(lambda r: len(r.calls) == 8 and r.running == 0, timeout=5)
    assert running.recorder.peak == 4
    assert time.monotonic() - started < 2.5  # two waves of 0.4 s, not eight


def test_empty_queue_back_off_is_capped_and_wake_polls_at_once(start_host: Callable[..., Running]) -> None:
    running = start_host(queues={"maxPollingInterval": "00:00:01"})
    time.sleep(1.6)  # 0.1 + 0.2 + 0.4 + 0.8: the back-off has reached its 1 s cap
    sent = time.monotonic()
    running.work.send_message(json.dumps({"key": "late"}))  # no wake: found by the next poll
    assert running.recorder.wait_for(lambda r: len(r.of("late")) == 1, timeout=3)
    assert running.recorder.of("late")[0].at - sent < 1.4

    time.sleep(0.05)  # a message arrived, so the back-off restarted from ~100 ms
    sent = time.monotonic()
    running.work.send_message(json.dumps({"key": "soon"}))
    assert running.recorder.wait_for(lambda r: len(r.of("soon")) == 1, timeout=3)
    assert running.recorder.of("soon")[0].at - sent < 0.6

    time.sleep(1.6)
    sent = time.monotonic()
    running.send_work("woken")  # send + wake
    assert running.recorder.wait_for(lambda r: len(r.of("woken")) == 1, timeout=3)
    assert running.recorder.of("woken")[0].at - sent < 0.3


def test_a_standby_rests_past_the_polling_interval_and_works_at_once_when_woken(
    start_host: Callable[..., Running],
) -> None:
    # A split host's standby worker (ADR 0054): its empty queue's back-off doubles past host.json's 0.5 s.
    running = start_host(rest_polling_interval=30.0)
    time.sleep(4.0)  # it looked at 0, 0.1, 0.3, 0.7, 1.5 and 3.1 s; the next look is at 6.3 s
    sent = time.monotonic()
    running.work.send_message(json.dumps({"key": "resting"}))  # no wake
    # Capped at 0.5 s it would be taken within half a second; resting, it waits for the look at 6.3 s.
    assert not running.recorder.wait_for(lambda r: len(r.of("resting")) == 1, timeout=1.0)
    running.host.wake(running.work.queue_name)
    assert running.recorder.wait_for(lambda r: len(r.of("resting")) == 1, timeout=3)
    assert running.recorder.of("resting")[0].at - sent < 4.0

    time.sleep(0.05)  # it found work, so its back-off restarted from ~100 ms
    sent = time.monotonic()
    running.work.send_message(json.dumps({"key": "next"}))  # no wake
    assert running.recorder.wait_for(lambda r: len(r.of("next")) == 1, timeout=3)
    assert running.recorder.of("next")[0].at - sent < 1.0


@pytest.mark.slow
def test_the_lease_is_renewed_while_a_slow_function_runs(start_host: Callable[..., Running]) -> None:
    running = start_host(lease_seconds=1)
    running.send_work("slow-1", sleep=2.5)
    assert running.recorder.wait_for(lambda r: len(r.of("slow-1")) == 1, timeout=5)
    for _ in range(4):  # well past the 1 s lease, the message stays invisible
        time.sleep(0.5)
        assert _visible(running.work) == []
    assert running.recorder.wait_for(lambda r: r.running == 0, timeout=3)
    assert _eventually(lambda: _count(running.work) == 0, timeout=3)
    assert [c.dequeue_count for c in running.recorder.of("slow-1")] == [1]


def test_stop_is_prompt_and_releases_what_is_still_running(start_host: Callable[..., Running]) -> None:
    running = start_host(stop_grace=0.3)
    running.send_work("long-1", sleep=3)
    assert running.recorder.wait_for(lambda r: len(r.of("long-1")) == 1, timeout=5)
    started = time.monotonic()
    running.host.stop()
    assert time.monotonic() - started < 1.5
    assert [json.loads(text)["key"] for text in _visible(running.work)] == ["long-1"]  # visible again at once


def test_stop_is_prompt_while_pollers_sleep(start_host: Callable[..., Running]) -> None:
    running = start_host(queues={"maxPollingInterval": "00:01:00"})
    time.sleep(0.5)
    started = time.monotonic()
    running.host.stop()
    assert time.monotonic() - started < 1.0


def test_the_apps_own_send_wakes_the_listener_and_anothers_waits_for_its_poll(
    start_host: Callable[..., Running],
) -> None:
    # Azure wakes a listener only for an output binding's send; the development host also for the app's
    # own sends (QueueSender), so an idle stack starts a job at once (docs/adr/0050).
    running = start_host(queues={"maxPollingInterval": "00:01:00"})
    queue = f"{running.prefix}-work"
    time.sleep(1.6)  # polls at about 0, 0.1, 0.3, 0.7 and 1.5 s: the next comes at about 3.1 s
    running.work.send_message(json.dumps({"key": "theirs"}))  # not through the app: nobody is told
    time.sleep(0.3)
    assert running.recorder.of("theirs") == []
    own = QueueSender(QueueServiceClient.from_connection_string(running.connection_string))
    sent = time.monotonic()
    own.send_text(queue, json.dumps({"key": "own"}))
    assert running.recorder.wait_for(lambda r: len(r.of("own")) == 1 and len(r.of("theirs")) == 1, timeout=3)
    assert running.recorder.of("own")[0].at - sent < 0.5  # not the 1.2 s left of the back-off


def test_only_sends_ready_at_once_are_told_and_a_failing_listener_costs_no_send(azurite: Azurite, unique: str) -> None:
    queue = f"told{unique}"
    heard: list[str] = []

    def broken(name: str) -> None:
        raise RuntimeError("a listener that fails")

    stop_broken, stop = listen_for_sends(broken), listen_for_sends(heard.append)
    service = QueueServiceClient.from_connection_string(azurite.connection_string)
    sender = QueueSender(service)
    sender.create(queue)
    try:
        assert sender.send_text(queue, "now") is not None
        assert sender.send_text(queue, "later", delay_s=30) is not None  # invisible: no listener can take it yet
        assert heard == [queue]
        stop()
        sender.send_text(queue, "unheard")
        assert heard == [queue]
    finally:
        stop()
        stop_broken()
        service.delete_queue(queue)


def test_a_host_whose_workers_run_the_queues_passes_the_apps_send_on_for_triggered_queues_only(
    start_host: Callable[..., Running], azurite: Azurite
) -> None:
    passed_on: list[str] = []
    running = start_host(run_queues=False, wake_elsewhere=passed_on.append)  # as the HTTP process of a split host
    service = QueueServiceClient.from_connection_string(azurite.connection_string)
    own = QueueSender(service)
    untriggered = f"{running.prefix}-nobody"
    for queue in (f"{running.prefix}-work", untriggered):  # no driver here creates the work queue
        own.create(queue)
    try:
        own.send_text(f"{running.prefix}-work", json.dumps({"key": "passed"}))
        own.send_text(untriggered, "no trigger reads it")
        assert passed_on == [f"{running.prefix}-work"]
        running.host.stop()
        own.send_text(f"{running.prefix}-work", json.dumps({"key": "after stop"}))
        assert passed_on == [f"{running.prefix}-work"]  # a stopped host hears nothing
    finally:
        service.delete_queue(untriggered)
