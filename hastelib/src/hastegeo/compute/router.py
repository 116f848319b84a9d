"""Choose the backend a job runs on. Pure: no I/O, no adapters constructed.

A candidate knows which workloads its backend can run *with its current
settings* and why it cannot run the others (no pool, no image, refused on
this host), so neither an explicit choice nor ``auto`` sends a job where the
adapter would refuse it. An explicit choice is honoured when that backend is
enabled and can run the workload. ``auto`` uses weighted rendezvous
(highest-random-weight) hashing keyed by the job id: each candidate gets the
score ``-w / ln(u)`` with ``u`` a hash of (job id, backend) in (0, 1), and the
highest score wins. The same job always routes the same way, each backend
receives a share proportional to its weight, and removing a backend moves only
the jobs that were on it.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from hastegeo.utils.errors import BackendUnavailableError, InvalidJobError


@dataclass(frozen=True)
class RouteCandidate:
    """An enabled backend: the workloads it takes, its ``auto`` weight, and why it takes no others."""

    name: str
    workloads: frozenset[str]
    weight: float = 1.0
    unable: Mapping[str, str] = field(default_factory=dict)  # workload → why this backend cannot run it now

    def why_not(self, workload: str) -> str:
        """Why this backend cannot run ``workload`` (only meaningful when it cannot)."""
        return self.unable.get(workload) or (
            f"it is configured for: {', '.join(sorted(self.workloads)) or 'no workload'}"
        )

    @property
    def takes_nothing_because(self) -> str | None:
        """One line when the backend takes no workload at all (each distinct reason once), else None."""
        if self.workloads:
            return None
        return "; ".join(dict.fromkeys(self.unable.values())) or "it is configured for no workload"


class ComputeRouter:
    def __init__(self, candidates: Mapping[str, RouteCandidate]) -> None:
        self._candidates = dict(candidates)

    @property
    def candidates(self) -> Mapping[str, RouteCandidate]:
        return self._candidates

    def resolve(self, requested: str, workload: str, job_id: str) -> str:
        """The backend name for this job.

        Raises:
            InvalidJobError: (``field="backend"``) the named backend is enabled
                but cannot run ``workload`` with its current settings; the
                message says why.
            BackendUnavailableError: the named backend is not enabled, or (for
                ``auto``) no enabled backend can run ``workload``.
        """
        if requested != "auto":
            candidate = self._candidates.get(requested)
            if candidate is None:
                raise BackendUnavailableError(f"Backend {requested!r} is not enabled", backend=requested)
            if workload not in candidate.workloads:
                raise InvalidJobError(
                    f"backend: {requested!r} cannot run {workload!r} workloads: {candidate.why_not(workload)}",
                    field="backend",
                )
            return requested
        ranked = self.ranking(workload, job_id)
        if not ranked:
            reasons = "; ".join(
                f"{c.name}: {c.why_not(workload)}" for c in sorted(self._candidates.values(), key=_name)
            )
            raise BackendUnavailableError(
                f"No enabled backend can run {workload!r} workloads" + (f" ({reasons})" if reasons else "")
            )
        return ranked[0]

    def ranking(self, workload: str, job_id: str) -> list[str]:
        """Every enabled backend that can run ``workload``, best first for this job: ``auto``'s first choice,
        then where the job goes when that one's compute does not come (the same order on every worker)."""
        able = [c for c in self._candidates.values() if workload in c.workloads and c.weight > 0]
        able.sort(key=lambda c: (rendezvous_score(job_id, c.name, c.weight), c.name), reverse=True)
        return [c.name for c in able]


def _name(candidate: RouteCandidate) -> str:
    return candidate.name


def rendezvous_score(key: str, node: str, weight: float) -> float:
    """Weighted rendezvous score of ``node`` for ``key``; higher wins."""
    digest = hashlib.sha256(f"{key}\x00{node}".encode()).digest()
    # 53 bits of the hash as a float strictly inside (0, 1).
    unit = (int.from_bytes(digest[:8], "big") >> 11) + 0.5
    u = unit / float(1 << 53)
    return -weight / math.log(u)
