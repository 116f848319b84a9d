"""Delivering every queue message twice, shuffled and concurrently, until the given jobs have ended."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from hastegeo.runtime import Runtime
from hastegeo.store.queues import POLL_QUEUE, SUBMIT_QUEUE, JobMessage


class TwiceShuffled:
    """The host's work done badly on purpose: every due submit and poll message run twice, in a
    shuffled order, on four threads at once, then deleted."""

    def __init__(self, runtime: Runtime, pool: ThreadPoolExecutor, seed: int) -> None:
        self.runtime = runtime
        self.pool = pool
        self.rng = random.Random(seed)
        self.steps = {SUBMIT_QUEUE: runtime.submit.handle, POLL_QUEUE: runtime.poll.handle}

    def round(self) -> None:
        """One round: every message due now, delivered twice."""
        queues = self.runtime.queues
        received = [
            (queue, message)
            for queue in self.steps
            for message in queues.client(queue).receive_messages(
                messages_per_page=16, max_messages=16, visibility_timeout=10
            )
        ]
        deliveries = [(queue, message) for queue, message in received for _ in range(2)]
        self.rng.shuffle(deliveries)
        list(self.pool.map(lambda d: self.steps[d[0]](JobMessage.model_validate_json(d[1].content)), deliveries))
        for queue, message in received:
            queues.client(queue).delete_message(message)

    def until_ended(self, ids: list[str], timeout_s: float) -> None:
        """Rounds until every job in ``ids`` has ended (bounded by ``timeout_s``)."""
        deadline = time.monotonic() + timeout_s
        while not all(self.runtime.store.get(i).state.terminal for i in ids):
            assert time.monotonic() < deadline, "jobs did not finish"
            self.round()
            time.sleep(0.05)


@contextmanager
def twice_shuffled(runtime: Runtime, *, seed: int) -> Iterator[TwiceShuffled]:
    with ThreadPoolExecutor(max_workers=4) as pool:
        yield TwiceShuffled(runtime, pool, seed)


def deliver_twice_shuffled(runtime: Runtime, ids: list[str], *, seed: int, timeout_s: float) -> None:
    """Deliver every message twice, shuffled and concurrently, until every job in ``ids`` has ended."""
    with twice_shuffled(runtime, seed=seed) as delivery:
        delivery.until_ended(ids, timeout_s)
