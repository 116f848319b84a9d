"""Where a reader is in a job's log across its runs: one integer offset for the job's whole life (docs/adr/0045). Pure.

A job's stdout starts again from nothing whenever its compute runs again: a Batch task requeued
onto another node or retried (a *run* of the provider job), or the job moved to another backend
by fail-over (a *stage*, one per backend it has been on: ``len(job.backends_left)``). So an offset
names the run as well as the byte: ``((stage * RUNS_PER_STAGE) + run) * RUN_SPAN + byte``. The
first run's offsets are its byte offsets, as before, so a reader that starts at 0 and follows
``nextOffset`` reads the same, and offsets only grow: a reader at the end of a run that is over
is handed a separator line and the next run's first offset. The API calls it a position, not a
byte count; it stays below 2^53 (exact in every JSON reader).
"""

from __future__ import annotations

from dataclasses import dataclass

RUN_SPAN = 1 << 40  # bytes one run's stream may hold (1 TiB)
RUNS_PER_STAGE = 1 << 10  # runs of one provider job (requeues and retries) an offset can name
STAGES = 8  # backends one job can be on: 2^53 / (RUN_SPAN * RUNS_PER_STAGE)
RUN_COPIES = "logs/runs"  # where a run's stream is copied under the job's prefix (Batch, see logcopy)


@dataclass(frozen=True, order=True)
class Position:
    """A byte of one run of one stage of a job's stream."""

    stage: int = 0
    run: int = 0
    byte: int = 0

    @classmethod
    def of(cls, offset: int) -> Position:
        """The position an API offset names (any integer from 0 to 2^53 - 1)."""
        segment, byte = divmod(offset, RUN_SPAN)
        stage, run = divmod(segment, RUNS_PER_STAGE)
        return cls(stage, run, byte)

    @property
    def offset(self) -> int:
        return (self.stage * RUNS_PER_STAGE + self.run) * RUN_SPAN + self.byte

    def at(self, byte: int) -> Position:
        return Position(self.stage, self.run, byte)

    def next_run(self) -> Position:
        return Position(self.stage, self.run + 1, 0)

    def next_stage(self) -> Position:
        return Position(self.stage + 1, 0, 0)


def run_copy(backend: str, run: int, path: str) -> str:
    """Where run ``run`` of ``backend``'s copy of ``path`` (``logs/stdout.txt``) is kept, under the job's prefix.

    One name per backend and run: a later run, or the backend's upload of the last run's stream to
    ``path`` itself at the end, never writes over an earlier run's bytes. A job is on a backend once.
    """
    return f"{RUN_COPIES}/{backend}-{run}/{path.rsplit('/', 1)[-1]}"


def run_separator(run: int, why: str | None) -> str:
    """The line a reader gets between two runs of one backend (``run``: the new one, 0-based)."""
    return f"--- attempt {run + 1} ({why or 'the task ran again'}) ---\n"


def stage_separator(left: str, now: str) -> str:
    """The line a reader gets when the job moved from backend ``left`` to ``now``."""
    return f"--- moved from {left} to {now} (its output starts again) ---\n"
