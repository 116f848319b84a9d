"""The order in which waiting jobs get free slots: projects take turns. Pure, standard library only.

A burst of one project must not starve another: each free slot goes to the
project with the fewest jobs running (counting the slots given out in this
round), and within a project to its oldest waiting job. Two admissions share
it: the local node's (every local job's process imports the node, so this
module loads nothing beyond the standard library) and the pipeline's, which
holds jobs back before they reach a provider (:mod:`hastegeo.pipeline.admission.fairshare`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence


def admission_order(
    waiting: Sequence[tuple[str, str]], running: Mapping[str, int], free: int, limit: int = 0
) -> list[str]:
    """Up to ``free`` names from ``waiting`` ((name, project), oldest first) to start now, projects in turn.

    A project with ``limit`` jobs running (0: no limit) gets no more.
    """
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
