"""A project's monthly budget reached mid-burst, on the local backend (its own Azurite: whole queues are read).

Each job sleeps about a second at a cent a second; the project may run two at once (ADR 0032), so the
rest of a burst waits for seats. Once what the project spent reaches its budget, the jobs given a seat
after that are held as ``queued`` (or refused) with the reason; the overshoot is what the jobs running
at that moment cost; the warning event and the 100 % event are each sent once.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path

import pytest
from azure.storage.queue import QueueClient, QueueServiceClient

from hastegeo.models.states import JobState
from hastegeo.pipeline.accept import parse_request
from hastegeo.pipeline.totals import month_of
from hastegeo.runtime import Runtime
from hastegeo.settings.load import load_settings
from hastegeo.store.queues import EVENTS_QUEUE, SUBMIT_QUEUE, JobMessage
from hastegeo_dev.devhost.azurite import Azurite
from tests.integration.conftest import put_input
from tests.support.processors import ScriptProcessor
from tests.support.runtime import development_runtime

pytestmark = pytest.mark.azurite
BUDGET = Decimal("0.03")
REASON = re.compile(r"^project p1 has spent (\d+\.\d\d) of 0\.03 USD this month$")


@contextmanager
def burst_runtime(tmp_path: Path, action: str) -> Iterator[tuple[Runtime, QueueServiceClient]]:
    with Azurite(in_memory=True) as azurite:
        env = {
            "AzureWebJobsStorage": azurite.connection_string,
            "HASTE_LOCAL_ROOT": str(tmp_path / "local"),
            "HASTE_LOCAL_SLOTS": "4",
            "HASTE_PROJECT_MAX_RUNNING": "2",
            "HASTE_LOCAL_PRICE_PER_SLOT_HOUR": "36",
            "HASTE_BUDGET_ACTION": action,
            "HASTE_PROJECT_BUDGETS": f"p1={BUDGET}",
        }
        runtime = development_runtime(load_settings(env), sleep=lambda _: None)
        runtime.deps.processors["artifacts"] = ScriptProcessor()
        put_input(runtime, "p1/a.txt", b"alpha")
        try:
            yield runtime, QueueServiceClient.from_connection_string(azurite.connection_string)
        finally:
            for adapter in runtime.registry.built().values():
                adapter.close()


def deliver(runtime: Runtime, queue: QueueClient) -> None:
    while messages := list(queue.receive_messages(messages_per_page=32, visibility_timeout=60)):
        for message in messages:
            runtime.submit.handle(JobMessage.model_validate_json(message.content))
            queue.delete_message(message)


def run_burst(runtime: Runtime, queues: QueueServiceClient, size: int) -> list[str]:
    body = {"workload": "artifacts", "projectId": "p1", "parameters": {"sleep": 1}}
    ids = [runtime.acceptor.accept(parse_request(body)).job.id for _ in range(size)]
    submit = queues.get_queue_client(SUBMIT_QUEUE)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        deliver(runtime, submit)
        jobs = [runtime.store.get(job_id) for job_id in ids]
        live = [job for job in jobs if job.handle is not None and not job.state.terminal]
        if not live and all(job.state.terminal or job.waiting_for_compute for job in jobs):
            return ids
        for job in live:
            runtime.poll.handle(JobMessage(job_id=job.id, kind="poll", poll_seq=job.poll_seq))
        time.sleep(0.05)
    raise AssertionError("the burst did not settle")


def budget_events(queues: QueueServiceClient) -> list[dict[str, object]]:
    queue = queues.get_queue_client(EVENTS_QUEUE)
    events = []
    while messages := list(queue.receive_messages(messages_per_page=32, visibility_timeout=60)):
        for message in messages:
            event = json.loads(message.content)
            if event["type"] == "com.haste.project.budget":
                events.append(event["data"])
            queue.delete_message(message)
    return events


def test_a_budget_reached_mid_burst_holds_the_jobs_after_it(tmp_path: Path) -> None:
    with burst_runtime(tmp_path, "hold") as (runtime, queues):
        ids = run_burst(runtime, queues, 6)
        jobs = [runtime.store.get(job_id) for job_id in ids]
        ran = [job for job in jobs if job.state is JobState.SUCCEEDED]
        held = [job for job in jobs if job.state is JobState.QUEUED]
        assert len(ran) + len(held) == len(ids), [(job.state, job.reason) for job in jobs]
        assert held, "nothing was held"
        for job in held:
            assert REASON.match(job.waiting_for_compute or ""), job.waiting_for_compute
            assert [e.message for e in job.history if "has spent" in e.message] == [
                f"waiting: {job.waiting_for_compute}"
            ]
        month = runtime.journal.totals.month("p1", month_of(ran[0].finished_at.date()))  # type: ignore[union-attr]
        costs = [job.cost.amount for job in ran if job.cost is not None and job.cost.amount is not None]
        assert month.total() == sum(costs, Decimal(0))
        # The overshoot: at most what the jobs running when the budget was reached cost (two at most at once).
        assert month.total() - BUDGET <= 2 * max(costs)
        assert month.total() >= BUDGET
        # The ending jobs only marked their costs; the warnings come with the write that adds them to the
        # month: the reconciler's next pass (docs/adr/0051).
        assert budget_events(queues) == []
        runtime.reconcile.run()
        runtime.reconcile.run()
        levels = [event["level"] for event in budget_events(queues)]
        assert sorted(levels) == [80, 100]  # each sent once
        assert runtime.journal.totals.month("p1", month_of(ran[0].finished_at.date()), pending=False).total() == sum(  # type: ignore[union-attr]
            costs, Decimal(0)
        )  # folded into the document
        # Redelivered, a held job stays held and says so once.
        runtime.submit.handle(JobMessage(job_id=held[0].id, kind="submit"))
        again = runtime.store.get(held[0].id)
        assert again.state is JobState.QUEUED
        assert len([e for e in again.history if "has spent" in e.message]) == 1


def test_a_budget_reached_refuses_the_jobs_after_it_when_the_operator_says_so(tmp_path: Path) -> None:
    with burst_runtime(tmp_path, "refuse") as (runtime, queues):
        jobs = [runtime.store.get(job_id) for job_id in run_burst(runtime, queues, 5)]
        refused = [job for job in jobs if job.state is JobState.FAILED]
        assert refused
        assert all(job.state in (JobState.SUCCEEDED, JobState.FAILED) for job in jobs)
        for job in refused:
            assert REASON.match(job.reason or ""), job.reason


def test_the_reconciler_commits_what_running_jobs_cost_so_far(tmp_path: Path) -> None:
    with burst_runtime(tmp_path, "hold") as (runtime, _queues):
        body = {"workload": "artifacts", "projectId": "p1", "parameters": {"sleep": 4}}
        job = runtime.acceptor.accept(parse_request(body)).job
        runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
        deadline = time.monotonic() + 30
        while not (seen := runtime.store.get(job.id)).usage:
            assert time.monotonic() < deadline
            runtime.poll.handle(JobMessage(job_id=job.id, kind="poll", poll_seq=seen.poll_seq))
            time.sleep(0.05)
        time.sleep(3.2)  # 3 s at a cent a second: the budget (0.03) reached while it runs
        runtime.reconcile.run()
        totals = runtime.journal.totals
        assert totals is not None
        month = totals.month("p1", month_of(runtime.deps.clock().date()))
        assert month.total() == 0
        assert month.committed >= BUDGET
        assert runtime.deps.budgets is not None
        reason = runtime.deps.budgets.reason("p1", totals)
        assert reason is not None
        assert REASON.match(reason)
        later = runtime.acceptor.accept(parse_request(body)).job
        runtime.submit.handle(JobMessage(job_id=later.id, kind="submit"))  # held by what is running
        assert runtime.store.get(later.id).waiting_for_compute == reason
