"""What the pipeline keeps of a job's runs, and its cost from them: a run never seen is never guessed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from types import SimpleNamespace

from hastegeo.compute.azure_batch.usage import PoolShape, pool_shape, region_of, task_usage
from hastegeo.costs.attribution import BatchAttempt, LocalAttempt
from hastegeo.costs.prices import Priority, shipped_table
from hastegeo.costs.usage import JobUsage, Run, Usage

T0 = datetime(2026, 12, 1, 10, tzinfo=UTC)
TABLE = shipped_table()


def batch(start: int, end: int, priority: Priority = Priority.DEDICATED) -> BatchAttempt:
    return BatchAttempt(
        region="westeurope",
        vm_size="Standard_D2s_v3",
        priority=priority,
        started_at=T0 + timedelta(seconds=start),
        ended_at=T0 + timedelta(seconds=end),
    )


def test_a_later_report_of_a_run_wins_and_a_closed_run_is_never_reopened() -> None:
    usage = JobUsage().told("azure_batch", Usage(runs=(Run(attempt=batch(0, 60), open=True),), count=1))
    usage = usage.told("azure_batch", Usage(runs=(Run(attempt=batch(0, 600)),), count=2))  # preempted at 600
    usage = usage.told("azure_batch", Usage(runs=(Run(attempt=batch(0, 900), open=True),), count=2))  # stale
    usage = usage.told("azure_batch", Usage(runs=(Run(attempt=batch(700, 1000)),), count=2))
    assert [(r.attempt.seconds(), r.open) for r in usage.runs] == [(600, False), (300, False)]
    cost = usage.cost(TABLE)
    assert cost.amount == Decimal("0.12") * 900 / 3600  # both runs: 900 s of a 0.12/h node
    assert len(cost.attempts) == 2


def test_a_run_counted_and_never_seen_makes_the_amount_unknown() -> None:
    usage = JobUsage().told("azure_batch", Usage(runs=(Run(attempt=batch(700, 1000)),), count=2))
    cost = usage.cost(TABLE)
    assert cost.amount is None
    assert cost.reason == (
        "1 run(s) on azure_batch were counted by the provider but never seen (Azure Batch reports only the latest run)"
    )
    assert cost.attempts[0].amount == Decimal("0.01")  # what is known is kept


def test_a_run_left_open_makes_the_amount_unknown() -> None:
    usage = JobUsage().told("azure_batch", Usage(runs=(Run(attempt=batch(0, 60), open=True),), count=1))
    assert usage.cost(TABLE).amount is None
    assert "never reported ended" in (usage.cost(TABLE).reason or "")


def test_runs_on_two_backends_sum_after_a_fail_over() -> None:
    usage = JobUsage().told("azure_batch", Usage.ended(batch(0, 1800)))
    local = LocalAttempt(slots=1, started_at=T0 + timedelta(hours=1), ended_at=T0 + timedelta(hours=2))
    usage = usage.told("local", Usage.ended(local))
    assert usage.cost(TABLE, local_rate=Decimal("0.5")).amount == Decimal("0.06") + Decimal("0.5")


def test_a_job_that_never_ran_costs_zero_in_the_tables_currency() -> None:
    cost = JobUsage().told("local", Usage(count=0)).cost(TABLE)
    assert (cost.amount, cost.currency) == (Decimal(0), "USD")


def test_a_batch_task_reports_its_latest_run_as_batch_describes_it() -> None:
    shape = PoolShape("standard_d2s_v3", 4, Priority.SPOT)
    start, requeued = T0, T0 + timedelta(minutes=5)
    info = SimpleNamespace(start_time=start, requeue_count=1, retry_count=0, last_requeue_time=requeued)
    waiting = SimpleNamespace(state="active", execution_info=info, required_slots=2)
    usage = task_usage(waiting, shape, "westeurope", T0 + timedelta(minutes=6))
    assert usage is not None
    [run] = usage.runs
    assert (run.open, run.attempt.seconds(), usage.count) == (False, 300, 1)  # the next run has not begun
    assert (run.attempt.task_slots, run.attempt.task_slots_per_node) == (2, 4)  # type: ignore[union-attr]
    again = SimpleNamespace(
        start_time=T0 + timedelta(minutes=6), requeue_count=1, retry_count=0, last_requeue_time=requeued
    )
    running = SimpleNamespace(state="running", execution_info=again, required_slots=1)
    usage = task_usage(running, shape, "westeurope", T0 + timedelta(minutes=7))
    assert usage is not None
    assert (usage.runs[0].open, usage.count, usage.previous_ended_at) == (True, 2, requeued)
    assert task_usage(running, PoolShape("x", 1, None), "westeurope", T0) == Usage(count=2)  # a mixed pool: unseen


def test_a_pool_says_its_priority_only_when_its_nodes_are_of_one_kind() -> None:
    def pool(dedicated: int, low: int) -> SimpleNamespace:
        return SimpleNamespace(
            vm_size="standard_d2s_v3",
            task_slots_per_node=2,
            target_dedicated_nodes=dedicated,
            current_dedicated_nodes=0,
            target_low_priority_nodes=low,
            current_low_priority_nodes=0,
        )

    assert pool_shape(pool(2, 0)) == PoolShape("standard_d2s_v3", 2, Priority.DEDICATED)
    assert pool_shape(pool(0, 2)) == PoolShape("standard_d2s_v3", 2, Priority.SPOT)
    assert pool_shape(pool(1, 1)) == PoolShape("standard_d2s_v3", 2, None)
    assert region_of("https://acct.westeurope.batch.azure.com") == "westeurope"
    assert region_of("http://127.0.0.1:8080") == ""


def test_the_end_of_the_run_before_closes_a_run_seen_running_and_not_since() -> None:
    usage = JobUsage().told("azure_batch", Usage(runs=(Run(attempt=batch(0, 60), open=True),), count=1))
    later = Usage(runs=(Run(attempt=batch(700, 1000)),), count=2, previous_ended_at=T0 + timedelta(seconds=600))
    usage = usage.told("azure_batch", later)
    assert [(r.attempt.seconds(), r.open) for r in usage.runs] == [(600, False), (300, False)]
    assert usage.cost(TABLE).amount == Decimal("0.12") * 900 / 3600
