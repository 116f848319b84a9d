"""The part of a job's log a reader gets next: whole lines, redacted (docs/adr/0045). Pure.

A log is read by byte offset, a bounded window at a time, while the workload
still writes it. A credential split across two windows would pass the
redaction rules in halves, so a window hands out only its complete lines and
the next read starts at the first byte it kept back. Only once nothing more
can come (the job ended and the window reached the end of the log) does the
last, unterminated line go out too. A single line longer than a whole window
cannot wait for its end: it is cut at its last whitespace (or at the window's
end when it has none), the one place a split can remain.
"""

from __future__ import annotations

from dataclasses import dataclass

from hastegeo.utils.redaction import redact

WINDOW_BYTES = 64 * 1024  # the most one read hands out
STREAMS = {"stdout": "logs/stdout.txt", "stderr": "logs/stderr.txt"}  # as every backend names them in blob


@dataclass(frozen=True)
class LogPart:
    """Redacted text for the bytes ``[offset, next_offset)`` of the log."""

    text: str
    next_offset: int


def next_part(data: bytes, offset: int, *, final: bool, window: int = WINDOW_BYTES) -> LogPart:
    """What to hand out of ``data`` (the log's bytes from ``offset``, at most ``window`` of them).

    ``final``: nothing will be appended beyond ``data`` (the job ended and this read reached the end),
    so an unterminated last line goes out as it is.
    """
    if final and len(data) < window:
        kept = data
    else:
        end = data.rfind(b"\n") + 1
        if end == 0 and len(data) >= window:  # one line longer than a window: cut where a split hurts least
            end = max(data.rfind(b" "), data.rfind(b"\t")) + 1 or len(data)
        kept = data[:end]
    return LogPart(text=redact_lines(kept), next_offset=offset + len(kept))


def redact_lines(data: bytes) -> str:
    """``data`` as text (invalid UTF-8 replaced), each line redacted on its own."""
    text = data.decode("utf-8", errors="replace")
    return "".join(redact(line) for line in text.splitlines(keepends=True))
