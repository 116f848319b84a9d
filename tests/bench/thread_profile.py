"""CPU profiles of every thread of a process, merged, and grouped by component.

``install(folder)`` gives each thread (the main one and each started later) its own
``cProfile.Profile`` timed by ``time.thread_time``: what it measures is CPU time, so a
thread blocked on a socket or a lock adds nothing, and the shares add up to the
process's CPU. At exit the profiles are merged into ``<folder>/<pid>.prof``.
:func:`by_component` sums a profile's own time (``tottime``) per component. A
measurement instrument for the benches, never part of the app.
"""

from __future__ import annotations

import atexit
import cProfile
import pstats
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

_profiles: list[cProfile.Profile] = []
_lock = threading.Lock()

# (component, substrings of a code location, first match wins). Locations are file paths,
# or "~" for built-ins, whose names say what they are ("<method 'recv_into' ...>").
COMPONENTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("azure SDK (storage, core)", ("/azure/core/", "/azure/storage/")),
    ("HTTP client to storage (requests, urllib3)", ("/requests/", "/urllib3/", "/http/client.py", "/charset_norm")),
    ("XML / isodate (SDK models)", ("/xml/", "/isodate/", "ElementTree", "expat")),
    ("pydantic / validation", ("/pydantic/", "/pydantic_core/", "/hastegeo/models/", "pydantic_core")),
    ("telemetry (OpenTelemetry)", ("/opentelemetry/", "/hastegeo/telemetry/")),
    ("JSON", ("/json/", "_json")),
    ("auth", ("/hastegeo/auth.py", "/api/access.py")),
    ("api handlers", ("/api/",)),
    ("hastegeo pipeline, store", ("/hastegeo/",)),
    ("azure.functions (HttpRequest/Response)", ("/azure/functions/",)),
    ("dev host", ("/hastegeo_dev/",)),
    ("HTTP server (http.server, socketserver)", ("/http/server.py", "/socketserver.py", "/email/", "/http/__init__")),
    ("logging", ("/logging/",)),
    ("sockets, ssl, select", ("socket", "select", "poll", "/selectors.py", "/ssl.py")),
    ("threads, queues, locks", ("/threading.py", "/queue.py", "/concurrent/", "thread", "lock", "acquire")),
)


def component(location: str) -> str:
    """The component a code location belongs to (pure)."""
    for name, needles in COMPONENTS:
        if any(needle in location for needle in needles):
            return name
    return "other (stdlib, interpreter)"


class _Snapshot:
    """What ``pstats.Stats`` reads from a profiler, without the ``disable()`` its ``create_stats`` does."""

    def __init__(self, stats: dict[Any, Any]) -> None:
        self.stats = stats

    def create_stats(self) -> None:
        pass


def _new_profile() -> cProfile.Profile:
    profile = cProfile.Profile(time.thread_time)
    with _lock:
        _profiles.append(profile)
    return profile


def install(folder: str, name: str, every_s: float = 1.0) -> None:
    """Profile this process's threads from now on; write ``<folder>/<name>.prof`` every ``every_s`` and at exit."""
    original_run = threading.Thread.run

    def run(self: threading.Thread) -> None:
        profile = _new_profile()
        profile.enable()
        try:
            original_run(self)
        finally:
            profile.disable()

    threading.Thread.run = run  # type: ignore[method-assign]
    main = _new_profile()
    main.enable()
    target = Path(folder) / f"{name}.prof"

    def dump() -> None:
        with _lock:
            profiles = list(_profiles)
        stats: pstats.Stats | None = None
        for profile in profiles:
            # Read, never disable, a profiler of another thread: that thread may still be in it
            # (pstats.Stats(profile) would disable it from this thread and corrupt its timings).
            profile.snapshot_stats()
            snapshot = _Snapshot(dict(profile.stats))  # type: ignore[attr-defined]
            if not snapshot.stats:
                continue
            if stats is None:
                stats = pstats.Stats(snapshot)  # type: ignore[arg-type]
            else:
                stats.add(snapshot)
        if stats is not None:
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_suffix(".part")
            stats.dump_stats(str(partial))
            partial.replace(target)

    def keep_writing() -> None:
        while True:
            time.sleep(every_s)
            dump()

    threading.Thread(target=keep_writing, daemon=True, name="profile-writer").start()
    atexit.register(dump)


def by_component(stats: pstats.Stats) -> Counter[str]:
    """CPU seconds per component: each function's own time, summed by where it lives."""
    totals: Counter[str] = Counter()
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    for (filename, _line, name), (_cc, _nc, tottime, _ct, _callers) in raw.items():
        totals[component(filename if filename != "~" else name)] += tottime
    return totals


def cumulative(stats: pstats.Stats, file_suffix: str, name: str) -> float:
    """Cumulative seconds of the function ``name`` defined in a file ending with ``file_suffix`` (0 if absent)."""
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    return sum(
        entry[3] for (filename, _line, fn), entry in raw.items() if fn == name and filename.endswith(file_suffix)
    )


def merge(profiles: list[cProfile.Profile]) -> pstats.Stats | None:
    """One ``pstats.Stats`` of finished (disabled) profilers."""
    stats: pstats.Stats | None = None
    for profile in profiles:
        profile.create_stats()
        if stats is None:
            stats = pstats.Stats(profile)
        else:
            stats.add(profile)
    return stats


def components_in(folder: Path) -> dict[str, Counter[str]]:
    """CPU seconds by component so far, per profiled process (file name without ``.prof``)."""
    return {path.stem: by_component(pstats.Stats(str(path))) for path in sorted(folder.glob("*.prof"))}


def top_functions(folder: Path, pattern: str, limit: int = 30) -> None:
    """Print the ``limit`` functions with the most own CPU time in the profiles named ``pattern``."""
    paths = sorted(folder.glob(pattern))
    if paths:
        pstats.Stats(*map(str, paths)).sort_stats("tottime").print_stats(limit)
