"""utils/side_by_side.each: a few calls on the calling thread, more on threads, all run, the first failure raised."""

from __future__ import annotations

import threading

import pytest

from hastegeo.utils.side_by_side import each


def test_up_to_alone_items_run_on_the_calling_thread_and_stop_at_the_first_failure() -> None:
    seen: list[tuple[int, str]] = []

    def work(item: int) -> None:
        seen.append((item, threading.current_thread().name))
        if item == 1:
            raise ValueError("one")

    with pytest.raises(ValueError, match="one"):
        each(work, [1, 2], at_once=4, name="t", alone=2)
    assert seen == [(1, threading.current_thread().name)]


def test_more_run_side_by_side_every_one_runs_and_the_first_failure_in_order_is_raised() -> None:
    together = threading.Barrier(3, timeout=10)  # three at once, or this waits and fails
    ran: list[int] = []

    def work(item: int) -> None:
        if item < 3:
            together.wait()
        ran.append(item)
        if item in (2, 4):
            raise ValueError(f"item {item}")

    with pytest.raises(ValueError, match="item 2"):
        each(work, [0, 1, 2, 3, 4], at_once=3, name="side")
    assert sorted(ran) == [0, 1, 2, 3, 4]
