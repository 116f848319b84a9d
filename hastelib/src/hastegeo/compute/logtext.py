"""The part of a job's log a reader gets next: whole lines, redacted (docs/adr/0045). Pure.

A log is read by byte offset, a bounded window at a time, while the workload
still writes it. A credential split across two windows would pass the
redaction rules in halves, so a window hands out only its complete lines and
the next read starts at the first byte it kept back. Only once nothing more
can come (the job ended and the window reached the end of the log) does the
last, unterminated line go out too. A single line longer than a whole window
cannot wait for its end: it goes out in parts, each cut where no redaction
rule matches across the cut and at least :data:`SECRET_BYTES` before the
window's end, so a credential up to that long is always whole on one side of
a cut (:func:`cut_long_line`).
"""

from __future__ import annotations

from dataclasses import dataclass

from hastegeo.utils.redaction import redact, secret_spans

WINDOW_BYTES = 64 * 1024  # the most one read hands out
SECRET_BYTES = 8 * 1024  # the longest credential a cut in a long line is kept clear of (a JWT is ~1-4 KiB)
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
        if end == 0 and len(data) >= window:  # one line longer than a window: cut where no credential is split
            end = cut_long_line(data)
        kept = data[:end]
    return LogPart(text=redact_lines(kept), next_offset=offset + len(kept))


def redact_lines(data: bytes) -> str:
    """``data`` as text (invalid UTF-8 replaced), each line redacted on its own."""
    text = data.decode("utf-8", errors="replace")
    return "".join(redact(line) for line in text.splitlines(keepends=True))


def cut_long_line(data: bytes, hold: int = SECRET_BYTES) -> int:
    """How many bytes of ``data`` (a window of one line that goes on past it) to hand out now, more than 0.

    The cut is never inside a match of the redaction rules, nor before the start of a match that
    reaches the window's end (it may go on past it), and it is at least ``hold`` characters (at most
    half the window) before the end, so a credential of up to ``hold`` characters that starts before
    the cut is wholly inside the window and seen by the rules. Whitespace is preferred. Only a window
    that is one rule match from its start to its end, longer than the window less ``hold``, has no such
    cut: it goes out whole, and is redacted as a whole (the one split left, see docs/adr/0045).
    """
    text = data.decode("utf-8", errors="surrogateescape")  # one character per undecodable byte: cuts map back
    spans = secret_spans(text)
    cut = len(text) - min(hold, len(text) // 2)
    cut = _clear_of(spans, cut, len(text))
    if cut <= 0:
        return len(data)
    space = max(text.rfind(" ", 0, cut), text.rfind("\t", 0, cut)) + 1
    if space > 0 and _clear_of(spans, space, len(text)) == space:
        cut = space
    return len(text[:cut].encode("utf-8", errors="surrogateescape"))


def _clear_of(spans: list[tuple[int, int]], cut: int, end: int) -> int:
    """The largest position at or before ``cut`` inside no span, and before every span that reaches ``end``."""
    moved = True
    while moved and cut > 0:
        moved = False
        for start, stop in spans:
            if start < cut and (cut < stop or stop >= end):
                cut, moved = start, True
    return cut
