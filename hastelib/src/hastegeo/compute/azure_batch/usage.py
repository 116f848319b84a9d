"""What a Batch task ran on, run by run, from the task's and its pool's own fields (docs/adr/0038). Pure.

Batch reports the latest run of a task: its start (``executionInfo.startTime``), its end once it completed,
how many times it was requeued (a preempted node) or retried, and when it last was. So a task seen
running reports its run so far (open); seen waiting again after a requeue or a retry, the run that
ended then; seen completed, its last run. The runs the pipeline saw in between are kept on the job
(:mod:`hastegeo.costs.usage`); a run preempted between two polls is counted and never seen.

The price basis is the pool's: its VM size, its task slots per node and whether its nodes are
dedicated or spot (low priority). A pool with both kinds of nodes does not say which one a run had:
the node the task runs on does (``isDedicated``), read once per node by the adapter
(:func:`node_priority`); a run whose node cannot be read is not described (its cost is unknown, and
says so).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from hastegeo.costs.attribution import BatchAttempt
from hastegeo.costs.prices import Priority
from hastegeo.costs.usage import Run, Usage


@dataclass(frozen=True)
class PoolShape:
    vm_size: str
    slots_per_node: int
    priority: Priority | None  # None: dedicated and spot nodes both


def pool_shape(pool: Any) -> PoolShape | None:
    """The pool's VM size, task slots per node and priority (None: it does not say its VM size)."""
    vm_size = getattr(pool, "vm_size", None)
    if not vm_size:
        return None
    low = int(getattr(pool, "target_low_priority_nodes", 0) or 0) + int(
        getattr(pool, "current_low_priority_nodes", 0) or 0
    )
    dedicated = int(getattr(pool, "target_dedicated_nodes", 0) or 0) + int(
        getattr(pool, "current_dedicated_nodes", 0) or 0
    )
    priority = Priority.SPOT if low and not dedicated else Priority.DEDICATED if not low else None
    return PoolShape(str(vm_size), int(getattr(pool, "task_slots_per_node", 1) or 1), priority)


def node_priority(node: Any) -> Priority | None:
    """Dedicated or spot, as a compute node says of itself (None: it does not say)."""
    dedicated = getattr(node, "is_dedicated", None)
    return None if dedicated is None else Priority.DEDICATED if dedicated else Priority.SPOT


def region_of(account_url: str) -> str:
    """``westeurope`` of ``https://acct.westeurope.batch.azure.com`` ('' for another host)."""
    host = urlsplit(account_url).hostname or ""
    parts = host.split(".")
    return parts[1] if len(parts) > 4 and host.endswith(".batch.azure.com") else ""


def task_usage(task: Any, shape: PoolShape | None, region: str, now: datetime) -> Usage | None:
    """The runs ``task`` reports (None: it has not run, or its pool cannot say what it ran on)."""
    info = getattr(task, "execution_info", None)
    start: datetime | None = getattr(info, "start_time", None)
    if start is None:
        return None
    state = str(getattr(getattr(task, "state", None), "value", getattr(task, "state", "")) or "").lower()
    ends = [t for t in (getattr(info, "last_requeue_time", None), getattr(info, "last_retry_time", None)) if t]
    # Each requeue or retry ended a run. A requeue or retry after the latest start ended the latest run, and
    # the task has not run since (waiting, or terminated while waiting); else the latest run is its own.
    ended_runs = int(getattr(info, "requeue_count", 0) or 0) + int(getattr(info, "retry_count", 0) or 0)
    after = [t for t in ends if t >= start]
    previous: datetime | None = None
    if after:
        end, still, count = max(after), False, ended_runs
    elif state in ("running", "completed"):
        count = ended_runs + 1
        previous = max(ends, default=None)
        end = (getattr(info, "end_time", None) or now) if state == "completed" else max(now, start)
        still = state == "running"
    else:
        return Usage(count=ended_runs)
    if shape is None or shape.priority is None or not region:
        return Usage(count=count)
    slots = int(getattr(task, "required_slots", 1) or 1)
    attempt = BatchAttempt(
        region=region,
        vm_size=shape.vm_size,
        priority=shape.priority,
        task_slots_per_node=max(shape.slots_per_node, slots),
        task_slots=slots,
        started_at=start,
        ended_at=max(end, start),
    )
    return Usage(runs=(Run(attempt=attempt, open=still),), count=count, previous_ended_at=previous)
