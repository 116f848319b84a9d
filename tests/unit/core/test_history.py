from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hastegeo.models.history import HEAD_KEPT, MESSAGE_MAX, append_event, make_event
from hastegeo.models.states import JobState

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_history_keeps_head_and_tail_and_counts_folded() -> None:
    history, folded = [], 0
    for i in range(100):
        event = make_event(T0 + timedelta(seconds=i), JobState.RUNNING, f"event {i}", "poll")
        history, folded = append_event(history, folded, event, limit=30)
    assert len(history) == 30
    assert folded == 70
    assert [e.message for e in history[:HEAD_KEPT]] == [f"event {i}" for i in range(HEAD_KEPT)]
    assert history[-1].message == "event 99"
    assert history[HEAD_KEPT].message == f"event {100 - (30 - HEAD_KEPT)}"


def test_messages_are_one_redacted_line_of_bounded_length() -> None:
    event = make_event(T0, JobState.FAILED, "line one\nline two sig=SECRET " + "x" * 1000, "poll")
    assert "\n" not in event.message
    assert "SECRET" not in event.message
    assert len(event.message) == MESSAGE_MAX


def test_progress_lines_keep_partial_lines_for_later_and_cap_floods() -> None:
    from hastegeo.pipeline.progress import PROGRESS_LINES_PER_POLL, ProgressLine, progress_lines

    assert progress_lines(None) == ([], 0)
    assert progress_lines(b"2026-01-01T00:00:00Z half a li") == ([], 0)
    lines, used = progress_lines(b"2026-01-01T00:00:00Z one\ntwo\nthr")
    assert (lines, used) == (
        [ProgressLine(T0, "one"), ProgressLine(None, "two")],
        len(b"2026-01-01T00:00:00Z one\ntwo\n"),
    )
    flood = b"".join(f"2026-01-01T00:00:{i:02d}Z line {i}\n".encode() for i in range(50))
    lines, used = progress_lines(flood)
    assert used == len(flood)
    assert len(lines) == PROGRESS_LINES_PER_POLL
    assert lines[0] == ProgressLine(T0 + timedelta(seconds=40), "(41 earlier progress lines not shown)")
    assert lines[-1] == ProgressLine(T0 + timedelta(seconds=49), "line 49")
