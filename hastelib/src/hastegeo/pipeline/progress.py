"""Reading a workload's progress log: complete lines, each with the time the workload wrote it.

Pure (bytes in, lines out; lines into a job's history), so following a job
and finishing it read the log the same way. The format is :class:`hastegeo.workloads._run.harness.ProgressLog`'s:
``<ISO 8601 UTC timestamp> <message>`` per line. A line without a readable
stamp is kept, with no time of its own (the history then uses the time it
was copied).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from hastegeo.models.history import add_workload_events
from hastegeo.models.job import Job

PROGRESS_LINES_PER_POLL = 10
# Lines kept even when earlier lines are summarised: that an attempt resumed from a checkpoint
# (and from which) is what a reader of a preempted job's history looks for first (ADR 0044).
KEPT_PREFIXES = ("resumed from the checkpoint",)
_STAMP = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?)(Z|[+-]\d{2}:?\d{2})?\s+")


@dataclass(frozen=True)
class ProgressLine:
    at: datetime | None  # when the workload wrote it, if the line says
    text: str


def parse_line(line: str) -> ProgressLine:
    """``2026-01-01T12:00:00.250Z step 2 of 5`` -> the time (UTC) and ``step 2 of 5``."""
    line = line.strip()
    match = _STAMP.match(line)
    if match is None:
        return ProgressLine(None, line)
    zone = match.group(2) or "Z"
    try:
        at = datetime.fromisoformat(match.group(1) + ("+00:00" if zone == "Z" else zone))
    except ValueError:  # looks like a stamp but is not a time (month 13): keep the line as written
        return ProgressLine(None, line)
    return ProgressLine(at.astimezone(UTC), line[match.end() :])


def progress_lines(data: bytes | None) -> tuple[list[ProgressLine], int]:
    """Complete new lines of a progress log, parsed, and the bytes they used.

    A partial last line is left for the next poll. When more than
    :data:`PROGRESS_LINES_PER_POLL` lines arrived at once, the earlier ones are
    summarised in one line (dated like the last of them) so a chatty workload
    cannot flood the history; a line that says an attempt resumed from a
    checkpoint (:data:`KEPT_PREFIXES`) is kept all the same.
    """
    if not data:
        return [], 0
    end = data.rfind(b"\n")
    if end < 0:
        return [], 0
    text = data[: end + 1].decode("utf-8", errors="replace")
    lines = [parse_line(line) for line in text.splitlines() if line.strip()]
    if len(lines) > PROGRESS_LINES_PER_POLL:
        kept = PROGRESS_LINES_PER_POLL - 1
        earlier = lines[:-kept]
        pinned = [line for line in earlier if line.text.startswith(KEPT_PREFIXES)]
        skipped = [line for line in earlier if not line.text.startswith(KEPT_PREFIXES)]
        summary = ProgressLine(skipped[-1].at, f"({len(skipped)} earlier progress lines not shown)")
        lines = [summary, *pinned, *lines[-kept:]] if skipped else [*pinned, *lines[-kept:]]
    return lines, end + 1


def with_workload_lines(job: Job, lines: list[ProgressLine], *, now: datetime, limit: int) -> Job:
    """``job`` with the workload's progress lines in its history, at the times they were written."""
    if not lines:
        return job
    history, folded = add_workload_events(
        job.history, job.history_folded, [(line.at, line.text) for line in lines], now=now, limit=limit
    )
    return job.model_copy(update={"history": history, "history_folded": folded, "updated_at": now})
