"""``make bench``'s goal lines (each figure against its goal, in the direction the goal runs) and its jobs' input."""

from __future__ import annotations

import zlib

from tests.bench.pipeline_bench import SIZED, Work, cores_busy, goals, machine_total

ON_GOAL = {"calls": 26, "idle_start_ms": 73.0, "idle_end_ms": 27.0, "ratio": 0.8, "tracing": 1.05}


def verdicts(lines: list[str]) -> list[str]:
    return [line.split()[0] for line in lines]


def test_a_figure_on_its_goal_meets_it_in_either_direction() -> None:
    assert verdicts(goals(**ON_GOAL)) == ["met"] * 5


def test_each_goal_is_missed_on_its_own_side() -> None:
    lines = goals(calls=27, idle_start_ms=74.0, idle_end_ms=28.0, ratio=0.79, tracing=1.0501)
    assert verdicts(lines) == ["MISS"] * 5
    above = goals(calls=1, idle_start_ms=1.0, idle_end_ms=1.0, ratio=0.95, tracing=0.9)
    assert verdicts(above) == ["met"] * 5  # a higher ratio, fewer calls, less latency and less tracing all meet


def test_a_goal_the_run_did_not_measure_says_so_and_neither_meets_nor_misses() -> None:
    lines = goals(calls=26, idle_start_ms=73.0, idle_end_ms=27.0)
    assert verdicts(lines) == ["—", "met", "met", "met", "—"]
    assert lines[0].endswith("goal ≥ 0.8, not measured by this run")
    assert lines[4].endswith("goal ≤ 1.05, not measured by this run")


def test_a_line_shows_the_figure_and_the_goal() -> None:
    line = goals(calls=26, idle_start_ms=36.4, idle_end_ms=47.0, ratio=0.5612)[0]
    assert line.split() == ["MISS", "pipeline", "/", "subprocess,", "1", "s", "jobs", "0.56", "goal", "≥", "0.8"]
    within = goals(**ON_GOAL)[4]
    assert within.split()[-4:] == ["1.050", "goal", "≤", "1.05"]


def test_the_pipelines_own_cpu_per_trivial_job_is_printed_to_lower_with_no_goal() -> None:
    lines = goals(**ON_GOAL, pipeline_cpu=(92.4, 77.2))
    assert len(lines) == 6
    assert verdicts(lines)[5] == "—"  # neither met nor missed
    assert lines[5].split()[1:7] == ["pipeline", "CPU,", "trivial", "job", "(ms)", "169.6"]
    assert lines[5].endswith("host 92.4 + Azurite 77.2")
    assert len(goals(**ON_GOAL)) == 5  # not printed when the run's jobs were not trivial


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
    assert SIZED.describe() == "artifacts jobs of 8192 KiB at level 9"  # the ratio's goal is for these
