"""A start is judged by the process's progress: slow under load is waited for, hung is not."""

from __future__ import annotations

import os

import pytest

from hastegeo_dev.readiness import StartBound, StartWatch, cpu_seconds_from_stat, process_cpu_seconds

BOUND = StartBound(stall_s=60.0, cpu_s=60.0, wall_s=600.0)


class Samples:
    """A clock and a CPU counter the test moves by hand."""

    def __init__(self, cpu: float | None = 0.0) -> None:
        self.now = 1000.0
        self.cpu = cpu

    def clock(self) -> float:
        return self.now

    def cpu_of(self, pid: int) -> float | None:
        return self.cpu


def watch(samples: Samples, bound: StartBound = BOUND) -> StartWatch:
    return StartWatch(4242, bound, clock=samples.clock, cpu_of=samples.cpu_of)


def test_a_start_that_keeps_progressing_slowly_is_waited_for_past_the_stall_bound() -> None:
    samples = Samples()
    start = watch(samples)
    for _ in range(50):  # 500 s of wall time, 0.05 s of CPU every 10 s: a loaded machine
        samples.now += 10
        samples.cpu = (samples.cpu or 0.0) + 0.05
        assert start.give_up() is None


def test_a_start_that_stops_using_cpu_is_given_up_after_the_stall_bound() -> None:
    samples = Samples()
    start = watch(samples)
    samples.now += 5
    samples.cpu = 2.5
    assert start.give_up() is None
    samples.now += 59.9
    assert start.give_up() is None
    samples.now += 0.1
    assert start.give_up() == "no progress for 60s (not ready after 2.5s of CPU time)"


def test_a_start_that_spins_is_given_up_after_its_cpu_budget() -> None:
    samples = Samples(cpu=0.2)
    start = watch(samples)
    samples.now += 59
    samples.cpu = 60.3
    assert start.give_up() == "not ready after 60s of CPU time"


def test_every_start_ends_at_the_wall_bound_whatever_it_does() -> None:
    samples = Samples()
    start = watch(samples)
    samples.now += 599
    samples.cpu = 1.0
    assert start.give_up() is None
    samples.now += 1
    samples.cpu = 1.5
    assert start.give_up() == "not ready after 600s"


def test_without_cpu_figures_the_stall_counts_from_the_start_as_a_fixed_bound_would() -> None:
    samples = Samples(cpu=None)
    start = watch(samples)
    samples.now += 59
    assert start.give_up() is None
    samples.now += 1
    assert start.give_up() == "not ready within 60s"


@pytest.mark.parametrize(
    ("line", "seconds"),
    [
        ("1234 (python3) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 99 0 0", 3.0),
        # A command name may hold spaces and parentheses; only the last ')' ends it.
        ("77 (a) b (c) R 1 77 77 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 5 0 0", 0.1),
    ],
)
def test_cpu_time_is_read_after_the_command_name(line: str, seconds: float) -> None:
    assert cpu_seconds_from_stat(line, 100) == pytest.approx(seconds)


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="no /proc on this system")
def test_a_live_process_has_cpu_time_and_a_gone_one_has_none() -> None:
    sum(range(2_000_000))  # some CPU of our own, so the reading is not zero
    own = process_cpu_seconds(os.getpid())
    assert own is not None
    assert own > 0
    assert process_cpu_seconds(2**22 + 12345) is None  # above pid_max's default: no such process
