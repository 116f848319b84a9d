"""Every storage call one job makes in its life, step by step (``python -m tests.bench.job_calls``).

One ``artifacts`` job on the local backend, against an Azurite of its own, through the
pipeline's own steps in this process, driven the way the Functions host drives them:
receive a message, run the step, delete the message. Calls are counted at the azure-core
transport (:mod:`tests.bench.storage_calls`) and reported per step and operation, so a
change that adds or removes a round trip shows exactly where. Unlike the load bench, no
idle queue polling and no reconciler pass are included: only what the job itself costs.

Steps: ``accept`` (the API's store and its submit message), ``submit``, ``end`` (the
workload's exit handled by the process that saw it, or the ``nudge`` message when that
is off), ``late poll`` (the poll chain's first message, arriving after the job ended).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from hastegeo.pipeline.accept import parse_request
from hastegeo.runtime import Runtime
from hastegeo.settings.load import load_settings
from hastegeo.store.queues import POLL_QUEUE, SUBMIT_QUEUE, JobMessage
from tests.bench import storage_calls
from tests.bench.profile_summary import Profile, lines
from tests.support.runtime import development_runtime


@dataclass
class JobCalls:
    """Calls by step, in the order the steps ran."""

    steps: dict[str, Counter[str]] = field(default_factory=dict)
    state: str = ""

    @property
    def total(self) -> int:
        return sum(sum(counts.values()) for counts in self.steps.values())

    def by_operation(self) -> Counter[str]:
        found: Counter[str] = Counter()
        for counts in self.steps.values():
            found.update(counts)
        return found


@contextmanager
def counted(calls: JobCalls, step: str) -> Iterator[Counter[str]]:
    """Count the calls this process sends while the block runs, as ``step``.

    The block adds to the counter it gets the calls it made only to wait (an empty
    receive, a read to see whether the job ended): they are not the job's.
    """
    waited: Counter[str] = Counter()
    before = storage_calls.snapshot()
    yield waited
    spent = storage_calls.snapshot() - before
    spent.subtract(waited)
    calls.steps[step] = calls.steps.get(step, Counter()) + +spent


def deliver(
    runtime: Runtime, queue: str, handle: Callable[[JobMessage], None], wait_s: float, waited: Counter[str]
) -> bool:
    """Receive one message of ``queue`` (waiting up to ``wait_s``), run ``handle``, delete it. False: none came.

    Empty receives are added to ``waited``: a host's idle polling, not the job's cost.
    """
    client = runtime.queues.client(queue)
    deadline = time.monotonic() + wait_s
    while True:
        for message in client.receive_messages(max_messages=1, visibility_timeout=30):
            handle(JobMessage.model_validate_json(message.content))
            client.delete_message(message)
            return True
        waited["GET queue message"] += 1
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)


def one_job(connection_string: str, workdir: Path, *, inline_exits: bool, profile: Profile | None = None) -> JobCalls:
    """Run one artifacts job through the steps and count its calls (the runtime's set-up is not counted).

    The process must have :func:`storage_calls.install` ed the counter and talk to no other storage meanwhile.
    With ``profile``, the steps' code (accept, submit, poll: not the host's receive and delete) runs
    under it; an exit handled inline runs on a thread of its own, so profile with ``inline_exits=False``.
    """
    settings = load_settings(
        {
            "AzureWebJobsStorage": connection_string,
            "HASTE_LOCAL_ROOT": str(workdir / "local"),
            "HASTE_POLL_INITIAL_S": "1",
            "HASTE_OTEL_EXPORT": "off",
        }
    )
    runtime = development_runtime(settings, inline_exits=inline_exits)
    runtime.blobs.get_container_client(settings.storage.inputs_container).upload_blob(
        "calls/input.txt", b"x" * 512, overwrite=True
    )
    for queue in (SUBMIT_QUEUE, POLL_QUEUE):
        runtime.queues.client(queue).clear_messages()  # created now, and nobody else's messages counted
    calls = JobCalls()
    accept, submit, poll = runtime.acceptor.accept, runtime.submit.handle, runtime.poll.handle
    if profile is not None:
        accept, submit, poll = profile.wrap(accept), profile.wrap(submit), profile.wrap(poll)
    key = f"calls-{time.time_ns()}"
    request = parse_request({"workload": "artifacts", "projectId": "calls", "inputs": [{"blob": "calls/input.txt"}]})
    try:
        with counted(calls, "accept"):
            job = accept(request, idempotency_key=key).job
        with counted(calls, "submit") as waited:
            deliver(runtime, SUBMIT_QUEUE, submit, 10, waited)
        with counted(calls, "end") as waited:
            deadline = time.monotonic() + 60
            while waited.update({"GET blob": 1}) or not runtime.store.get(job.id).state.terminal:
                if not inline_exits:
                    deliver(runtime, POLL_QUEUE, poll, 0.5, waited)
                if time.monotonic() > deadline:
                    raise TimeoutError(f"job {job.id} did not end")
                time.sleep(0.02)
            time.sleep(0.5)  # what the step does after its last write (cleanup, the chain's message) counts too
        calls.state = runtime.store.get(job.id).state.value
        with counted(calls, "late poll") as waited:
            deliver(runtime, POLL_QUEUE, poll, settings.pipeline.poll_initial_s + 3, waited)
    finally:
        for adapter in runtime.registry.built().values():
            adapter.close()
    return calls


def measure(*, inline_exits: bool = True) -> tuple[JobCalls, Profile]:
    """One job's calls (exits as the Functions app handles them), then a second job's profile."""
    from hastegeo_dev.devhost.azurite import Azurite

    storage_calls.install()
    profile = Profile()
    with tempfile.TemporaryDirectory(prefix="haste-calls-") as tmp, Azurite(in_memory=True) as azurite:
        calls = one_job(azurite.connection_string, Path(tmp) / "calls", inline_exits=inline_exits)
        one_job(azurite.connection_string, Path(tmp) / "profile", inline_exits=False, profile=profile)
    return calls, profile


def report(calls: JobCalls, profile: Profile) -> list[str]:
    found = [f"storage calls of one artifacts job on the local backend ({calls.state}): {calls.total}"]
    for step, counts in calls.steps.items():
        detail = ", ".join(f"{name} {count}" for name, count in sorted(counts.items()))
        found.append(f"  {step:<10} {sum(counts.values()):>3}  {detail}")
    found.append("where the host's time goes for one job (steps profiled in one thread, idle stack):")
    found.extend(lines(profile.categories(), profile.cpu_s, profile.wall_s))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nudge-messages", action="store_true", help="end jobs through nudge messages, not inline")
    args = parser.parse_args()
    calls, profile = measure(inline_exits=not args.nudge_messages)
    print("\n" + "\n".join(report(calls, profile)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
