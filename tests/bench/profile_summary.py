"""Where a step's time goes, by kind: a cProfile run grouped into a few readable categories.

The profile measures wall time (``time.perf_counter``), so time spent blocked shows too:
a storage round trip is mostly ``waiting`` (the socket) plus ``Azure SDK`` (building the
request, parsing the answer). Each function's own time (``tottime``) goes to exactly one
category, so the categories add up to the profiled time. Pure grouping
(:func:`categorize`, :func:`summarize`) is kept apart from running the profiler.
"""

from __future__ import annotations

import cProfile
import pstats
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

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
    if any(part in path for part in ("/requests/", "/urllib3/", "/urllib/", "/http/client", "/ssl.py", "/socket.py")):
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


def summarize(stats: pstats.Stats) -> Counter[str]:
    """Seconds of own time per category."""
    found: Counter[str] = Counter()
    for (filename, _line, function), row in stats.stats.items():  # type: ignore[attr-defined]
        found[categorize(filename, function)] += float(row[2])  # tottime
    return found


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

    def categories(self) -> Counter[str]:
        return summarize(pstats.Stats(self._profile))


def lines(categories: Counter[str], cpu_s: float, wall_s: float, jobs: int = 1) -> list[str]:
    """The summary as printable lines: milliseconds per job by category, then CPU against wall time."""
    total = sum(categories.values()) or 1.0
    found = [
        f"    {name:<18}{categories[name] * 1000 / jobs:>8.1f} ms {categories[name] / total:>6.0%}"
        for name in CATEGORIES
        if categories[name]
    ]
    found.append(f"    {'(host CPU)':<18}{cpu_s * 1000 / jobs:>8.1f} ms of {wall_s * 1000 / jobs:.1f} ms wall")
    return found
