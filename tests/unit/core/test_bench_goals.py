"""``make bench``'s goal lines (each figure against its goal, in the direction the goal runs) and its jobs' input."""

from __future__ import annotations

import zlib

from tests.bench.pipeline_bench import Work, cores_busy, goals, machine_total


def verdicts(lines: list[str]) -> list[str]:
    return [line.split()[0] for line in lines]


def test_a_figure_on_its_goal_meets_it_in_either_direction() -> None:
    lines = goals(ratio=0.8, calls=12, accept_per_s=100.0, idle_start_ms=68.0, idle_end_ms=89.0)
    assert verdicts(lines) == ["met"] * 5


def test_each_goal_is_missed_on_its_own_side() -> None:
    lines = goals(ratio=0.79, calls=13, accept_per_s=99.9, idle_start_ms=69.0, idle_end_ms=90.0)
    assert verdicts(lines) == ["MISS"] * 5
    above = goals(ratio=0.9, calls=1, accept_per_s=500.0, idle_start_ms=1.0, idle_end_ms=1.0)
    assert verdicts(above) == ["met"] * 5  # more throughput, fewer calls and less latency all meet


def test_tracing_has_a_goal_line_when_the_run_measured_it() -> None:
    within = goals(ratio=0.8, calls=12, accept_per_s=100.0, idle_start_ms=68.0, idle_end_ms=89.0, tracing=1.05)
    over = goals(ratio=0.8, calls=12, accept_per_s=100.0, idle_start_ms=68.0, idle_end_ms=89.0, tracing=1.0501)
    assert (verdicts(within)[5:], verdicts(over)[5:]) == (["met"], ["MISS"])
    assert within[5].split()[-4:] == ["1.050", "goal", "≤", "1.05"]


def test_a_line_shows_the_figure_and_the_goal() -> None:
    line = goals(ratio=0.5612, calls=19, accept_per_s=117.06, idle_start_ms=36.4, idle_end_ms=47.0)[0]
    assert line.split() == ["MISS", "pipeline", "/", "subprocess", "0.56", "goal", "≥", "0.8"]


def test_the_machine_account_adds_every_process_and_says_how_many_cores_were_busy() -> None:
    run = {"jobs": 100, "window_s": 20.0, "machine": {"workloads": 300.0, "host": 60.0, "Azurite": 40.0}}
    assert machine_total(run) == 400.0
    assert cores_busy(run) == 2.0  # 100 jobs x 0.4 s of CPU over 20 s


def test_a_bench_jobs_input_is_the_same_text_of_the_size_asked() -> None:
    assert Work().data == Work().data
    assert len(Work().data) == 1024
    large = Work(kib=64, level=9)
    assert len(large.data) == 64 * 1024
    assert len(zlib.compress(large.data, 9)) < len(large.data) // 2  # text deflate works on, not random bytes
    assert large.params == {"compressLevel": 9}
    assert (Work().describe(), large.describe()) == ("trivial artifacts jobs", "artifacts jobs of 64 KiB at level 9")
