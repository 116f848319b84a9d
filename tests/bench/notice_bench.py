"""How long after a provider job ends the pipeline notices it, per backend (issue 40; ADR 0041, ADR 0048).

Two ways an end is seen:

- **the poll chain**: the next poll after the end. At a job's age the chain's delay is
  ``PollChain.delay`` (it grows with the job's age up to the backend's longest), and an end
  falls anywhere in that delay: seen after half of it at the median, all of it at worst.
  Arithmetic from the settings' own numbers, printed for a job 1 minute, 10 minutes and
  1 hour into its run.
- **an event**: the local backend's exit notice (ADR 0030) and Azure ML's run event (ADR 0048).
  Measured here for Azure ML: the stand-in (``hastegeo_dev.testing.aml_standin``) publishes its
  documented ``RunStatusChanged`` event to the ``provider-events`` queue on Azurite when the test
  ends a run, a receiver takes it as the Functions host's queue listener would, and the runtime's
  ``provider_events`` step looks at the job; the figure is from the run's end to the job's
  terminal state in the store. The host's own wait for a message (``maxPollingInterval``, 1 s
  in host.json, once its listener has backed off on an idle queue) comes on top at worst.

Run: ``python -m tests.bench.notice_bench [--jobs 20]`` (part of ``make bench-scale``).
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import UTC, datetime, timedelta

from azure.storage.queue import QueueServiceClient

from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.pipeline.chain import PollChain
from hastegeo.settings.load import load_settings
from hastegeo.store.queues import PROVIDER_EVENTS_QUEUE

HOST_QUEUE_WAIT_S = 1.0  # host.json maxPollingInterval: the longest a listener waits between looks
AGES_S = (60, 600, 3600)


def chain_rows() -> list[tuple[str, str, float, float]]:
    """(backend, job age, median seconds, worst seconds) for an end seen by the next poll.

    The chain is followed from the job's start, poll by poll, with the settings' own delays: the
    delay in force at the given age is the one an end at that age waits out.
    """
    settings = load_settings({"AzureWebJobsStorage": "UseDevelopmentStorage=true"})
    start = datetime(2026, 1, 1, 12, tzinfo=UTC)
    clock = [start]
    chain = PollChain(None, settings.pipeline, lambda: clock[0], settings.poll_max_s)  # type: ignore[arg-type]
    rows = []
    for backend in ("local", "azure_batch", "azure_ml"):
        job = Job.model_validate(
            {
                "id": "j1",
                "projectId": "p1",
                "workload": "artifacts",
                "state": JobState.RUNNING,
                "requestedBackend": backend,
                "backend": backend,
                "createdAt": start,
                "updatedAt": start,
                "startedAt": start,
                "deadlineAt": start + timedelta(days=1),
                "handle": {"backend": backend, "providerIds": {}, "submittedAt": start},
            }
        )
        for age in AGES_S:
            elapsed, seq = 0.0, 0
            while True:
                clock[0] = start + timedelta(seconds=elapsed)
                delay = chain.delay(seq, job)
                if elapsed + delay > age:
                    break
                elapsed, seq = elapsed + delay, seq + 1
            rows.append((backend, f"{age // 60} min", delay / 2, delay))
    return rows


def measure_events(jobs: int) -> list[float]:
    """Seconds from an Azure ML run's end to its job's terminal state, through the event, one per job."""
    from tests.integration.azure_ml.test_aml_fairshare import workspace

    seen: list[float] = []
    with workspace() as aml:
        connection = aml.runtime.settings.storage.connection_string
        queue = QueueServiceClient.from_connection_string(connection).get_queue_client(PROVIDER_EVENTS_QUEUE)
        aml.standin.publish_events(lambda text: queue.send_message(text))

        def deliver() -> None:  # as the host's queue listener: each message to the step, then deleted
            for message in queue.receive_messages(messages_per_page=32):
                aml.runtime.provider_events.handle(message.content.encode())
                queue.delete_message(message)

        for _ in range(jobs):
            job_id = aml.submit("p1")
            aml.deliver()
            aml.standin.set_status(f"haste-{job_id}", "Running")
            deliver()  # the start: names no job
            ended = time.perf_counter()
            aml.standin.set_status(f"haste-{job_id}", "Failed", error=("UserError", "exit code 1"))
            while not aml.runtime.store.get(job_id).state.terminal:
                deliver()
            seen.append(time.perf_counter() - ended)
    return seen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=20, help="Azure ML jobs ended through their event")
    args = parser.parse_args()

    print("An end seen by the poll chain (the next poll; arithmetic from the settings):")
    print(f"  {'backend':<12} {'job age':>8} {'median':>9} {'worst':>9}")
    for backend, age, median, worst in chain_rows():
        print(f"  {backend:<12} {age:>8} {median:>8.0f}s {worst:>8.0f}s")
    seen = measure_events(args.jobs)
    print(f"\nAn Azure ML end seen through its run event (measured, {len(seen)} jobs, the stand-in on Azurite):")
    print(
        f"  median {statistics.median(seen) * 1000:.0f} ms, worst {max(seen) * 1000:.0f} ms"
        f" (+ up to {HOST_QUEUE_WAIT_S:.0f} s of the host's queue wait when idle), whatever the job's age"
    )
    print("  The local backend's exit notice runs the same step in the process that saw the exit (ADR 0030).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
