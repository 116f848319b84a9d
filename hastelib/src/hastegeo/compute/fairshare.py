"""Admission that takes projects in turn when capacity is short. Pure, standard library only.

A burst of one project must not starve another: each free slot goes to the
project with the fewest jobs running (counting the slots given out in this
round), and within a project to its oldest waiting job. A project at its
limit of running jobs (0: none) waits, and says so
(``project p1 has 20 of 20 running jobs``). The local backend's admission
uses it (every job's process imports that module, so nothing heavy here).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence


def admission_order(
    waiting: Sequence[tuple[str, str]], running: Mapping[str, int], free: int, limit: int = 0
) -> list[str]:
    """Up to ``free`` names from ``waiting`` ((name, project), oldest first) to start now, projects in turn."""
    counts = Counter(running)
    queues: dict[str, list[int]] = {}
    for index, (_, project) in enumerate(waiting):
        queues.setdefault(project, []).append(index)
    picks: list[str] = []
    while len(picks) < free:
        able = [p for p, q in queues.items() if q and (limit <= 0 or counts[p] < limit)]
        if not able:
            break
        project = min(able, key=lambda p: (counts[p], queues[p][0]))
        picks.append(waiting[queues[project].pop(0)][0])
        counts[project] += 1
    return picks


def limit_reason(project: str, running: int, limit: int) -> str | None:
    """Why a job of ``project`` waits although a slot may be free, or None when its project is under the limit."""
    if limit > 0 and running >= limit:
        return f"project {project or '(none)'} has {running} of {limit} running jobs"
    return None
