"""Delivering every queue message twice, shuffled and concurrently, until the given jobs have ended."""

from __future__ import annotations

import random
import time
from concurrent.futures import ThreadPoolExecutor

from hastegeo.runtime import Runtime
from hastegeo.store.queues import POLL_QUEUE, SUBMIT_QUEUE, JobMessage


def deliver_twice_shuffled(runtime: Runtime, ids: list[str], *, seed: int, timeout_s: float) -> None:
    """Receive the submit and poll queues' messages, run each step twice in a shuffled order on four
    threads, delete them, and repeat until every job in ``ids`` has ended (bounded by ``timeout_s``)."""
    rng = random.Random(seed)
    steps = {SUBMIT_QUEUE: runtime.submit.handle, POLL_QUEUE: runtime.poll.handle}
    deadline = time.monotonic() + timeout_s
    with ThreadPoolExecutor(max_workers=4) as pool:
        while not all(runtime.store.get(i).state.terminal for i in ids):
            assert time.monotonic() < deadline, "jobs did not finish"
            received = [
                (queue, message)
                for queue in steps
                for message in runtime.queues.client(queue).receive_messages(
                    messages_per_page=16, max_messages=16, visibility_timeout=10
                )
            ]
            deliveries = [(queue, message) for queue, message in received for _ in range(2)]
            rng.shuffle(deliveries)
            list(pool.map(lambda d: steps[d[0]](JobMessage.model_validate_json(d[1].content)), deliveries))
            for queue, message in received:
                runtime.queues.client(queue).delete_message(message)
            time.sleep(0.05)
