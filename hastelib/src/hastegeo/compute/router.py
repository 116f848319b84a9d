"""Choose the backend a job runs on. Pure: no I/O, no adapters constructed.

An explicit choice is honoured when that backend is enabled and can run the
workload. ``auto`` uses weighted rendezvous (highest-random-weight) hashing
keyed by the job id: each candidate gets the score ``-w / ln(u)`` with ``u``
a hash of (job id, backend) in (0, 1), and the highest score wins. The same
job always routes the same way, each backend receives a share proportional
to its weight, and removing a backend moves only the jobs that were on it.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass

from hastegeo.utils.errors import BackendUnavailableError


@dataclass(frozen=True)
class RouteCandidate:
    name: str
    workloads: frozenset[str]
    weight: float = 1.0


class ComputeRouter:
    def __init__(self, candidates: Mapping[str, RouteCandidate]) -> None:
        self._candidates = dict(candidates)

    @property
    def candidates(self) -> Mapping[str, RouteCandidate]:
        return self._candidates

    def resolve(self, requested: str, workload: str, job_id: str) -> str:
        """The backend name for this job.

        Raises:
            BackendUnavailableError: the named backend is not enabled or cannot
                run ``workload``, or (for ``auto``) no enabled backend can.
        """
        if requested != "auto":
            candidate = self._candidates.get(requested)
            if candidate is None:
                raise BackendUnavailableError(f"Backend {requested!r} is not enabled", backend=requested)
            if workload not in candidate.workloads:
                raise BackendUnavailableError(
                    f"Backend {requested!r} cannot run {workload!r} workloads"
                    f" (it is configured for: {', '.join(sorted(candidate.workloads)) or 'none'})",
                    backend=requested,
                )
            return requested
        able = [c for c in self._candidates.values() if workload in c.workloads and c.weight > 0]
        if not able:
            raise BackendUnavailableError(f"No enabled backend can run {workload!r} workloads")
        return max(able, key=lambda c: (rendezvous_score(job_id, c.name, c.weight), c.name)).name


def rendezvous_score(key: str, node: str, weight: float) -> float:
    """Weighted rendezvous score of ``node`` for ``key``; higher wins."""
    digest = hashlib.sha256(f"{key}\x00{node}".encode()).digest()
    # 53 bits of the hash as a float strictly inside (0, 1).
    unit = (int.from_bytes(digest[:8], "big") >> 11) + 0.5
    u = unit / float(1 << 53)
    return -weight / math.log(u)
