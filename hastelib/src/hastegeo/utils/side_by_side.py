"""Calls that each wait on storage, made side by side: what a few round trips cost is the longest, not the sum."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")


def each(work: Callable[[T], object], items: Sequence[T], *, at_once: int, name: str, alone: int = 1) -> None:
    """Call ``work`` on every item, up to ``at_once`` at a time on threads named ``name``; up to ``alone`` items
    on the calling thread instead (threads cost more than they save there, and one at a time the first failure
    ends the rest). Side by side, every call runs and the first failure, in the items' order, is raised after."""
    if len(items) <= alone:
        for item in items:
            work(item)
        return
    with ThreadPoolExecutor(max_workers=min(at_once, len(items)), thread_name_prefix=name) as pool:
        for done in [pool.submit(work, item) for item in items]:
            done.result()
