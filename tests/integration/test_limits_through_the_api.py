"""What a project's jobs look like through the API agrees with its limits at every moment (ADR 0039).

A job holds its admission seat from before its submission until after the write that says its
provider's job ended, and the journal frees the seat only then: so however the steps interleave,
the API never lists more of a project's jobs as submitting, running or being cancelled than the
seats its backend has. A sampler lists them through the API's store as fast as it can while the
steps run a burst to its end on the real local backend.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from hastegeo.models.states import JobState
from hastegeo.pipeline.accept import parse_request
from hastegeo.pipeline.journal import HOLDS_SEAT
from hastegeo.store.queues import JobMessage
from tests.conftest import RuntimeFactory

from .conftest import put_input, request

pytestmark = pytest.mark.azurite
SEATS = 2
BURST = 6


def test_the_api_never_shows_more_running_jobs_than_the_seats(make_runtime: RuntimeFactory) -> None:
    runtime = make_runtime(HASTE_BACKEND_MAX_RUNNING=f"local={SEATS}", HASTE_LOCAL_SLOTS="4")
    put_input(runtime, "p1/a.txt", b"x" * 64)
    ids = [runtime.acceptor.accept(parse_request(request())).job.id for _ in range(BURST)]
    seen: list[int] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            page = runtime.api.store.list("p1", states=HOLDS_SEAT, page_size=50)
            seen.append(len(page.jobs))

    def drive(states: frozenset[JobState], step: Callable[[JobMessage], None], kind: str) -> None:
        """Run ``step`` for every job in ``states`` until the burst ended (a submitter, or a poller)."""
        while not stop.is_set():
            for job_id in ids:
                if runtime.store.get(job_id).state in states:
                    step(JobMessage(job_id=job_id, kind=kind))
            time.sleep(0.02)

    threads = [
        threading.Thread(target=sample, daemon=True),
        threading.Thread(target=drive, args=(frozenset({JobState.QUEUED}), runtime.submit.handle, "submit")),
        threading.Thread(target=drive, args=(HOLDS_SEAT | {JobState.POSTPROCESSING}, runtime.poll.handle, "nudge")),
    ]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 120
    try:
        while not all(runtime.store.get(job_id).state.terminal for job_id in ids):
            assert time.monotonic() < deadline, [runtime.store.get(job_id).state.value for job_id in ids]
            time.sleep(0.1)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
    assert [runtime.store.get(job_id).state for job_id in ids] == [JobState.SUCCEEDED] * BURST
    assert len(seen) > 20  # the sampler saw the burst run, not only its end
    assert max(seen) == SEATS  # the seats were used, and never exceeded
    held = [runtime.store.get(job_id) for job_id in ids]
    assert any("waiting: all 2 seats of local are taken" in e.message for job in held for e in job.history)
