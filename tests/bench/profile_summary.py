"""Where a step's time goes, by kind: a cProfile run grouped into a few readable categories.

The profile measures wall time (``time.perf_counter``), so time spent blocked shows too:
a storage round trip is mostly ``waiting`` (the socket) plus ``Azure SDK`` (building the
request, parsing the answer). Each function's own time (``tottime``) goes to exactly one
category, so the categories add up to the profiled time. A function that names no
category by itself (a built-in such as ``isinstance`` or a ``str`` method, or a standard
library helper such as ``email`` header parsing or ``hmac``) counts toward the categories
of its callers, in proportion to the time each spent in it: ``other`` is left with only
what no categorized code called. Pure grouping (:func:`categorize`, :func:`summarize`) is
kept apart from running the profiler.
"""

from __future__ import annotations

import cProfile
import pstats
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

CATEGORIES = (
    "waiting",
    "Azure SDK",
    "HTTP client",
    "JSON and models",
    "processes",
    "telemetry",
    "pipeline code",
    "other",
)

# The HTTP client's modules (``email`` parses http.client's headers).
_HTTP_CLIENT = ("/requests/", "/urllib3/", "/urllib/", "/http/client", "/email/", "/ssl.py", "/socket.py")

# Built-in functions that block: network, locks, sleeps, child processes.
_BLOCKING = ("recv", "send", "connect", "select", "poll", "sleep", "acquire", "wait", "read", "getaddrinfo")


def categorize(filename: str, function: str) -> str:
    """The category of one profiled function (``filename`` as cProfile reports it; ``~`` for built-ins)."""
    path = filename.replace("\\", "/")
    if filename == "~":
        if any(word in function for word in ("fork_exec", "posix.", "waitpid")):
            return "processes"
        if any(word in function for word in _BLOCKING):
            return "waiting"
        if "json" in function or "pydantic" in function:
            return "JSON and models"
        return "other"
    if "/azure/" in path:
        return "Azure SDK"
    if any(part in path for part in _HTTP_CLIENT):
        return "HTTP client"
    if any(part in path for part in ("/json/", "/pydantic/", "/pydantic_core/", "/xml/", "/isodate/")):
        return "JSON and models"
    if "/subprocess.py" in path or "/multiprocessing/" in path:
        return "processes"
    if "/threading.py" in path or "/queue.py" in path or "/selectors.py" in path:
        return "waiting"
    if "/opentelemetry/" in path:
        return "telemetry"
    if "/hastegeo/" in path:
        return "pipeline code"
    return "other"


Key = tuple[str, int, str]  # cProfile's (filename, line, function)


def summarize(stats: pstats.Stats) -> dict[str, float]:
    """Seconds of own time per category, a function without one counted toward its callers'."""
    table: dict[Key, tuple[Any, ...]] = stats.stats  # type: ignore[attr-defined]
    memo: dict[Key, dict[str, float]] = {}

    def shares(key: Key, path: frozenset[Key]) -> dict[str, float]:
        """The fractions of ``key``'s own time that belong to each category (they add up to 1)."""
        own = categorize(key[0], key[2])
        if own != "other":
            return {own: 1.0}
        if key in memo:
            return memo[key]
        # Each caller's weight is the time the function spent when that caller called it.
        callers = {caller: float(edge[3]) for caller, edge in table[key][4].items() if caller in table}
        callers = {caller: weight for caller, weight in callers.items() if caller not in path and weight > 0}
        total = sum(callers.values())
        if not total or len(path) > 64:
            return {"other": 1.0}
        found: defaultdict[str, float] = defaultdict(float)
        for caller, weight in callers.items():
            for category, share in shares(caller, path | {key}).items():
                found[category] += share * weight / total
        memo[key] = dict(found)
        return memo[key]

    summary = dict.fromkeys(CATEGORIES, 0.0)
    for key, row in table.items():
        for category, share in shares(key, frozenset()).items():
            summary[category] += float(row[2]) * share  # tottime
    return summary


class Profile:
    """Profiles the blocks it is entered for (the calling thread only) and adds their CPU time."""

    def __init__(self) -> None:
        self._profile = cProfile.Profile(time.perf_counter)
        self.cpu_s = 0.0
        self.wall_s = 0.0

    @contextmanager
    def running(self) -> Iterator[None]:
        cpu, wall = time.thread_time(), time.perf_counter()
        self._profile.enable()
        try:
            yield
        finally:
            self._profile.disable()
            self.cpu_s += time.thread_time() - cpu
            self.wall_s += time.perf_counter() - wall

    def wrap(self, step: Callable[P, R]) -> Callable[P, R]:
        """``step``, profiled whenever it runs."""

        def profiled(*args: P.args, **kwargs: P.kwargs) -> R:
            with self.running():
                return step(*args, **kwargs)

        return profiled

    def categories(self) -> dict[str, float]:
        return summarize(pstats.Stats(self._profile))


def lines(categories: dict[str, float], cpu_s: float, wall_s: float, jobs: int = 1) -> list[str]:
    """The summary as printable lines: milliseconds per job by category, then CPU against wall time."""
    total = sum(categories.values()) or 1.0
    found = [
        f"    {name:<18}{categories[name] * 1000 / jobs:>8.1f} ms {categories[name] / total:>6.0%}"
        for name in CATEGORIES
        if categories[name]
    ]
    found.append(f"    {'(host CPU)':<18}{cpu_s * 1000 / jobs:>8.1f} ms of {wall_s * 1000 / jobs:.1f} ms wall")
    return found
