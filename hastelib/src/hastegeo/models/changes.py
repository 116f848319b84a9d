"""A job's state changes, numbered per job: what the job events are made from (docs/events.md).

Every write of a job document goes through :func:`stamp` (the store calls it), which
compares the stored job with the one about to be written and records each state the
job entered, with a sequence number and the time of its history event. The list is
short by construction: the state machine has no cycles, so a job enters at most six
states. :attr:`Job.events_published` records how far the events have been published;
the changes after it are :func:`pending` (ADR 0024). An ended job's record is its
``active/`` index entry being gone, not this field (the store's ending write).

Pure functions only: the store writes, :mod:`hastegeo.events` publishes.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from hastegeo.models.states import ALLOWED, JobState

if TYPE_CHECKING:
    from hastegeo.models.job import Job


class StateChange(BaseModel):
    """One state a job entered: its per-job sequence number (from 1), the state, and when."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True, alias_generator=to_camel)

    seq: int
    state: JobState
    at: datetime


def stamp(before: Job | None, after: Job) -> Job:
    """``after`` with the states it entered since ``before`` (None: a new job) added to its changes.

    The states come from the history events ``after`` adds, in order, so a write that
    moves a job through two states (queued → submitting → running) records both. Only
    moves the state machine allows count: a workload's late progress lines, copied into
    the running band while the job post-processes, are not a move back to running.
    """
    old_events = set(before.history) if before is not None else set()
    current = before.state if before is not None else None
    changes = list(before.state_changes) if before is not None else []
    seq = changes[-1].seq if changes else (before.events_published if before is not None else 0)
    added: list[StateChange] = []
    for event in after.history:
        if event in old_events or event.state == current:
            continue
        if current is None or event.state in ALLOWED[current]:
            seq += 1
            added.append(StateChange(seq=seq, state=event.state, at=event.at))
            current = event.state
    if after.state != current:  # a move without its own event (not made by the pipeline): still a change
        seq += 1
        added.append(StateChange(seq=seq, state=after.state, at=after.updated_at))
    if not added:
        return after
    return after.model_copy(update={"state_changes": [*changes, *added]})


def pending(job: Job) -> list[StateChange]:
    """The changes whose events are not known to be published yet, oldest first."""
    return [change for change in job.state_changes if change.seq > job.events_published]


def mark_published(job: Job, seq: int) -> Job | None:
    """``job`` recording that its events up to ``seq`` are published (None: it records that already)."""
    if job.events_published >= seq:
        return None
    return job.model_copy(update={"events_published": seq})
