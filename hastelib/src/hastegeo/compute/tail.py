"""The end of a workload's stderr, as every backend quotes it in a failure reason.

Backends read at most :data:`TAIL_BYTES` from the end of ``logs/stderr.txt``
(a log may be large, its last lines are what explain a failure) and append
them to their own words with :func:`with_stderr`, so a failure reads alike
wherever it ran.
Standard library only.
"""

from __future__ import annotations

TAIL_BYTES = 4096
TAIL_LINES = 5
TAIL_CHARS = 400


def with_stderr(head: str, stderr: str | None) -> str:
    """``head: <the last lines of stderr>``, or ``head`` alone when stderr says nothing."""
    tail = last_lines(stderr) if stderr else ""
    return f"{head}: {tail}" if tail else head


def last_lines(text: str, lines: int = TAIL_LINES, limit: int = TAIL_CHARS) -> str:
    """The last non-empty lines of ``text`` joined by `` | ``, capped at ``limit`` characters."""
    kept = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
    joined = " | ".join(kept)
    return joined if len(joined) <= limit else "…" + joined[-(limit - 1) :]
