"""A workload's progress lines: parsed with their own time, placed where they happened in the history."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hastegeo.models.history import StatusEvent, add_workload_events, make_event
from hastegeo.models.states import JobState
from hastegeo.pipeline.progress import ProgressLine, parse_line
from hastegeo.workloads._run.harness import ProgressLog

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("2026-03-01T12:00:02.250Z step 2 of 5", ProgressLine(at(2.25), "step 2 of 5")),
        ("2026-03-01T12:00:02Z  spaced  ", ProgressLine(at(2), "spaced")),
        ("2026-03-01T13:00:02+01:00 from a node in another zone", ProgressLine(at(2), "from a node in another zone")),
        ("2026-03-01T12:00:02 no zone means UTC", ProgressLine(at(2), "no zone means UTC")),
        ("no stamp at all", ProgressLine(None, "no stamp at all")),
        ("2026-13-01T12:00:02Z not a month", ProgressLine(None, "2026-13-01T12:00:02Z not a month")),
        ("2026-03-01T12:00:02Z", ProgressLine(None, "2026-03-01T12:00:02Z")),
    ],
)
def test_a_progress_line_is_split_into_its_time_and_text(line: str, expected: ProgressLine) -> None:
    assert parse_line(line) == expected


def test_what_progress_log_writes_parses_back_to_the_time_it_was_written(tmp_path: Path) -> None:
    log = ProgressLog(tmp_path / "logs" / "w_progress.log")
    before = datetime.now(UTC)
    log.step("tile 3\nof 9")
    after = datetime.now(UTC)
    log.close()
    parsed = parse_line((tmp_path / "logs" / "w_progress.log").read_text())
    assert parsed.text == "tile 3 of 9"
    assert parsed.at is not None
    assert before - timedelta(milliseconds=1) <= parsed.at <= after  # to the millisecond, not the second


def running_history() -> list[StatusEvent]:
    return [
        make_event(at(0), JobState.QUEUED, "accepted", "api"),
        make_event(at(1), JobState.SUBMITTING, "submitting to local", "submit"),
        make_event(at(2), JobState.RUNNING, "submitted to local", "submit"),
    ]


def finished_history() -> list[StatusEvent]:
    return [
        *running_history(),
        make_event(at(10), JobState.POSTPROCESSING, "workload finished (exit code 0); post-processing", "poll"),
    ]


def test_lines_copied_while_the_job_runs_keep_their_own_time() -> None:
    history, folded = add_workload_events(
        running_history(), 0, [(at(3.5), "step 1"), (at(4.25), "step 2")], now=at(9), limit=50
    )
    assert folded == 0
    assert [(e.at, e.state, e.message, e.source) for e in history[3:]] == [
        (at(3.5), JobState.RUNNING, "step 1", "workload"),
        (at(4.25), JobState.RUNNING, "step 2", "workload"),
    ]


def test_lines_copied_by_post_processing_go_back_into_the_running_band() -> None:
    history, _ = add_workload_events(
        finished_history(), 0, [(at(3), "started"), (at(8), "finished in 5.0s")], now=at(12), limit=50
    )
    assert [e.message for e in history] == [
        "accepted",
        "submitting to local",
        "submitted to local",
        "started",
        "finished in 5.0s",
        "workload finished (exit code 0); post-processing",
    ]
    assert [e.state for e in history[3:5]] == [JobState.RUNNING, JobState.RUNNING]
    assert [e.at for e in history[3:5]] == [at(3), at(8)]


def test_a_stamp_outside_the_window_the_line_was_written_in_is_pulled_into_it() -> None:
    lines = [
        (at(-60), "a clock behind ours"),
        (None, "no stamp"),
        (at(5), "on time"),
        (at(3), "out of order"),
        (at(3600), "a clock ahead of ours"),
    ]
    history, _ = add_workload_events(finished_history(), 0, lines, now=at(12), limit=50)
    placed = {e.message: e.at for e in history}
    assert placed["a clock behind ours"] == at(2)  # not before "submitted to local"
    assert placed["no stamp"] == at(2)  # the earliest it can have been written
    assert placed["on time"] == at(5)
    assert placed["out of order"] == at(5)  # never before the line above it
    assert placed["a clock ahead of ours"] == at(10)  # not after the workload was seen to finish
    times = [e.at for e in history]
    assert times == sorted(times)


def test_lines_while_cancelling_take_that_state_and_the_history_stays_bounded() -> None:
    history = [*running_history(), make_event(at(3), JobState.CANCEL_REQUESTED, "cancel requested", "api")]
    history, folded = add_workload_events(history, 0, [(at(4 + i), f"line {i}") for i in range(6)], now=at(20), limit=8)
    assert len(history) == 8
    assert folded == 2
    assert history[-1] == make_event(at(9), JobState.CANCEL_REQUESTED, "line 5", "workload")
    assert history[0].message == "accepted"  # the head is kept


def test_workload_lines_are_sanitized_like_every_event() -> None:
    history, _ = add_workload_events(
        running_history(), 0, [(at(3), "fetched https://x/y?sv=1&sig=SECRETSIG")], now=at(4), limit=50
    )
    assert "SECRETSIG" not in history[-1].message
