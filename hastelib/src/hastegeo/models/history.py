"""Status history: append-only, sanitized, bounded.

History is what an operator reads at 3 a.m., so every message goes through
one door (:func:`make_event`): redacted, one line, capped in length. The
list keeps the first events (how the job started) and the latest ones (how
it is ending), and counts what was folded in between rather than growing
without limit inside the job document.

Time never runs backwards along the list. A workload's own progress lines
(:func:`add_workload_events`) carry the time the workload wrote them and the
state the job was in then, even when the pipeline copies them later: they
go at the end of the running band, before the move to post-processing, and
a stamp is only ever moved into the window the line can have been written
in (not before the event it follows, not after the one it precedes).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from hastegeo.models.states import JobState
from hastegeo.utils.redaction import redact

MESSAGE_MAX = 400
HEAD_KEPT = 10
# The states a workload runs in: its progress lines belong to this part of the history.
RUNNING_BAND = frozenset({JobState.RUNNING, JobState.CANCEL_REQUESTED})


class StatusEvent(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, alias_generator=to_camel)

    at: datetime
    state: JobState
    message: str
    source: str = Field(description="Which part of the pipeline wrote it: api, submit, poll, postprocess, …")


def clean_message(text: str) -> str:
    """One redacted line of at most :data:`MESSAGE_MAX` characters."""
    line = " ".join(redact(text).split())
    return line if len(line) <= MESSAGE_MAX else line[: MESSAGE_MAX - 1] + "…"


def make_event(at: datetime, state: JobState, message: str, source: str) -> StatusEvent:
    return StatusEvent(at=at, state=state, message=clean_message(message), source=source)


def append_event(
    history: list[StatusEvent], folded: int, event: StatusEvent, limit: int
) -> tuple[list[StatusEvent], int]:
    """Return the new history and folded count after appending ``event``.

    When the list would exceed ``limit``, the oldest event after the first
    :data:`HEAD_KEPT` is dropped and counted in ``folded``.
    """
    return _bounded([*history, event], folded, limit)


def add_workload_events(
    history: list[StatusEvent],
    folded: int,
    lines: Iterable[tuple[datetime | None, str]],
    *,
    now: datetime,
    limit: int,
    source: str = "workload",
) -> tuple[list[StatusEvent], int]:
    """Return the history with a workload's ``(stamp, text)`` lines where they happened.

    They go after the last event of the running band (at the end while the
    job runs; before ``workload finished …; post-processing`` when
    post-processing copies them late), in the state of that event. Each
    line's time is its own stamp, kept between the event before it and the
    one after it (``now`` at the end); a line without a stamp takes the
    earliest time it can have been written (the line before it), so it never
    pushes the stamped lines after it out of place.
    """
    index = max((i + 1 for i, event in enumerate(history) if event.state in RUNNING_BAND), default=len(history))
    before = history[index - 1] if index else None
    state = before.state if before is not None and before.state in RUNNING_BAND else JobState.RUNNING
    ceiling = history[index].at if index < len(history) else now
    floor = before.at if before is not None else None
    added = []
    for stamp, text in lines:
        earliest = stamp if floor is None else floor if stamp is None else max(stamp, floor)
        at = ceiling if earliest is None else min(earliest, ceiling)
        added.append(make_event(at, state, text, source))
        floor = at
    return _bounded([*history[:index], *added, *history[index:]], folded, limit)


def _bounded(updated: list[StatusEvent], folded: int, limit: int) -> tuple[list[StatusEvent], int]:
    if len(updated) > limit:
        drop = len(updated) - limit
        head = min(HEAD_KEPT, limit // 2)
        updated = updated[:head] + updated[head + drop :]
        folded += drop
    return updated, folded
