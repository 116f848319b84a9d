"""What a job ran on, run by run, as its backends report it, and the job's cost from it. Pure.

A backend reports :class:`Usage` with a status (:attr:`hastegeo.compute.contract.ComputeStatus.usage`):
the runs it can describe, each an attempt of :mod:`hastegeo.costs.attribution` (what it ran on, its start
and its end), and how many runs the provider counts in all. A run still going is reported ``open``, its
end being the time of the report. The pipeline keeps the runs it was told of on the job (:func:`merge`, in
writes it makes anyway) and prices them when the job ends (:func:`usage_cost`):

* a run is known by its backend and its start; a later report of it wins, except that a closed run is
  never reopened;
* a run left open when the job ended, or one the provider counted but never described (Azure Batch tells
  only the latest run's start: a run preempted between two polls is never seen), makes the job's amount
  ``None`` with the reason: a cost is never guessed (docs/adr/0038).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from hastegeo.costs.attribution import AmlAttempt, Attempt, BatchAttempt, Cost, LocalAttempt, job_cost
from hastegeo.costs.prices import PriceTable

AnyAttempt = BatchAttempt | AmlAttempt | LocalAttempt


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, alias_generator=to_camel, extra="forbid", frozen=True)


class Run(_Model):
    """One run of a job's compute: an attempt, and whether it was still going when reported."""

    attempt: Attempt
    open: bool = Field(False, description="Still running when reported: its end is the time of the report.")

    @property
    def key(self) -> tuple[str, datetime]:
        return self.attempt.backend, self.attempt.started_at


class Usage(_Model):
    """What a backend tells of a job's runs with one status (docs/adr/0038)."""

    runs: tuple[Run, ...] = ()
    count: int | None = Field(None, ge=0, description="Runs the provider counts in all; None: those listed.")
    previous_ended_at: datetime | None = Field(
        None, description="When the run before those listed ended (Batch: its last requeue or retry), if known."
    )

    @classmethod
    def ended(cls, *attempts: AnyAttempt) -> Usage:
        """Runs that have all ended, and nothing more the provider counts."""
        return cls(runs=tuple(Run(attempt=attempt) for attempt in attempts), count=len(attempts))


class JobUsage(_Model):
    """What the pipeline keeps on a job: every run it was told of, on every backend, and the provider's counts."""

    runs: tuple[Run, ...] = ()
    counted: dict[str, int] = Field(default_factory=dict, description="Runs each backend counts in all.")

    def told(self, backend: str, usage: Usage | None) -> JobUsage:
        """These runs with what ``backend`` reports now (``usage``)."""
        if usage is None:
            return self
        runs = merge(self.runs, usage)
        counted = dict(self.counted)
        if usage.count is not None:
            counted[backend] = max(usage.count, counted.get(backend, 0))
        return JobUsage(runs=tuple(runs), counted=counted)

    def shape(self) -> tuple[set[tuple[str, datetime, bool]], dict[str, int]]:
        """What a write must keep: which runs, whether each has ended, and the counts (not an open run's end)."""
        return {(*run.key, run.open) for run in self.runs}, self.counted

    def unseen(self) -> dict[str, int]:
        """Runs per backend that the provider counted and never described."""
        described: dict[str, int] = {}
        for run in self.runs:
            described[run.attempt.backend] = described.get(run.attempt.backend, 0) + 1
        return {
            name: count - described.get(name, 0)
            for name, count in self.counted.items()
            if count > described.get(name, 0)
        }

    def so_far(self, now: datetime) -> JobUsage:
        """These runs with each one still going ended ``now``: what a running job has cost so far."""
        runs = tuple(
            Run(attempt=run.attempt.model_copy(update={"ended_at": max(run.attempt.ended_at, now)}))
            if run.open
            else run
            for run in self.runs
        )
        return JobUsage(runs=runs)

    def cost(self, table: PriceTable, *, local_rate: Decimal = Decimal(0)) -> Cost:
        """The job's cost (see :func:`usage_cost`)."""
        return usage_cost(self.runs, table, unseen=self.unseen(), local_rate=local_rate)


def merge(known: Sequence[Run], usage: Usage | None) -> list[Run]:
    """``known`` runs with those of ``usage`` (a later report of a run wins; a closed run is never reopened).

    ``usage.previous_ended_at`` closes the latest run still open that started before it and before the
    runs listed: the run a requeue or a retry ended, seen running and not since.
    """
    runs = {run.key: run for run in known}
    for run in usage.runs if usage is not None else ():
        before = runs.get(run.key)
        if before is None or before.open or not run.open:
            runs[run.key] = run
    ended = usage.previous_ended_at if usage is not None else None
    if ended is not None and usage is not None:
        first = min((run.attempt.started_at for run in usage.runs), default=ended)
        backends = {run.attempt.backend for run in usage.runs}
        earlier = [
            run
            for run in runs.values()
            if run.open
            and run.attempt.started_at < min(first, ended)
            and (not backends or run.attempt.backend in backends)
        ]
        if earlier:
            last = max(earlier, key=lambda run: run.attempt.started_at)
            runs[last.key] = Run(attempt=last.attempt.model_copy(update={"ended_at": ended}))
    return sorted(runs.values(), key=lambda run: run.attempt.started_at)


def usage_cost(
    runs: Sequence[Run],
    table: PriceTable,
    *,
    unseen: dict[str, int] | None = None,
    local_rate: Decimal = Decimal(0),
) -> Cost:
    """The job's cost: its ended runs priced and summed; None and why when a run's bounds are not known.

    ``unseen``: runs per backend that the provider counted and never described.
    """
    closed = [run.attempt for run in runs if not run.open]
    cost = job_cost(closed, table, local_rate=local_rate)
    reasons = [
        f"a run on {run.attempt.backend} that started at {run.attempt.started_at.isoformat()} was never reported ended"
        for run in runs
        if run.open
    ]
    reasons += [
        f"{count} run(s) on {backend} were counted by the provider but never seen "
        f"({'Azure Batch reports only the latest run' if backend == 'azure_batch' else 'not reported'})"
        for backend, count in sorted((unseen or {}).items())
        if count
    ]
    if not reasons:
        return cost
    reason = "; ".join(([cost.reason] if cost.reason else []) + reasons)
    return cost.model_copy(update={"amount": None, "currency": None, "reason": reason})
