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

A job runs under a compute profile (ADR 0043): an explicit backend must offer
it to the job's workload, and ``auto`` (and fail-over, which follows the same
ranking) considers only the backends that do.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from hastegeo.profiles import DEFAULT_PROFILE
from hastegeo.utils.errors import BackendUnavailableError, InvalidJobError


@dataclass(frozen=True)
class RouteCandidate:
    """An enabled backend: the workloads it takes, its ``auto`` weight, and why it takes no others."""

    name: str
    workloads: frozenset[str]
    weight: float = 1.0
    unable: Mapping[str, str] = field(default_factory=dict)  # workload → why this backend cannot run it now
    # Profile → the workloads that may use it here; empty: only ``default``, for every workload it takes.
    profiles: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def offers(self, workload: str, profile: str) -> bool:
        """Whether a job of ``workload`` may run here under ``profile``."""
        if workload not in self.workloads:
            return False
        if not self.profiles:
            return profile == DEFAULT_PROFILE
        return workload in self.profiles.get(profile, frozenset())

    def allowed_profiles(self, workload: str) -> list[str]:
        """The profiles a job of ``workload`` may use here, ``default`` first."""
        names = [name for name in (DEFAULT_PROFILE, *sorted(self.profiles)) if self.offers(workload, name)]
        return list(dict.fromkeys(names))

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

    def resolve(self, requested: str, workload: str, job_id: str, profile: str = DEFAULT_PROFILE) -> str:
        """The backend name for this job.

        Raises:
            InvalidJobError: (``field="backend"``) the named backend is enabled
                but cannot run ``workload`` with its current settings; the
                message says why. (``field="profile"``) no backend that the
                request allows offers ``profile`` to ``workload``; the message
                lists the profiles it may use.
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
            if not candidate.offers(workload, profile):
                raise self._no_profile(profile, workload, requested, candidate.allowed_profiles(workload))
            return requested
        ranked = self.ranking(workload, job_id, profile)
        if not ranked and self.ranking(workload, job_id):
            raise self._no_profile(profile, workload, "any enabled backend", self.allowed_profiles(workload))
        if not ranked:
            reasons = "; ".join(
                f"{c.name}: {c.why_not(workload)}" for c in sorted(self._candidates.values(), key=_name)
            )
            raise BackendUnavailableError(
                f"No enabled backend can run {workload!r} workloads" + (f" ({reasons})" if reasons else "")
            )
        return ranked[0]

    def ranking(self, workload: str, job_id: str, profile: str = DEFAULT_PROFILE) -> list[str]:
        """Every enabled backend that can run ``workload`` under ``profile``, best first for this job: ``auto``'s
        first choice, then where the job goes when that one's compute does not come (the same order on every
        worker)."""
        able = [c for c in self._candidates.values() if c.offers(workload, profile) and c.weight > 0]
        able.sort(key=lambda c: (rendezvous_score(job_id, c.name, c.weight), c.name), reverse=True)
        return [c.name for c in able]

    def allowed_profiles(self, workload: str, backend: str = "auto") -> list[str]:
        """The profiles a job of ``workload`` may name on ``backend`` (``auto``: on any enabled backend that
        ``auto`` may choose), ``default`` first."""
        chosen = [self._candidates[backend]] if backend in self._candidates else []
        if backend == "auto":
            chosen = [c for c in self._candidates.values() if c.weight > 0]
        names = [name for candidate in chosen for name in candidate.allowed_profiles(workload)]
        return sorted(dict.fromkeys(names), key=lambda name: (name != DEFAULT_PROFILE, name))

    @staticmethod
    def _no_profile(profile: str, workload: str, where: str, allowed: list[str]) -> InvalidJobError:
        choices = ", ".join(allowed) or "none"
        return InvalidJobError(
            f"profile: {profile!r} is not offered to {workload!r} workloads on {where}; allowed: {choices}",
            field="profile",
        )


def _name(candidate: RouteCandidate) -> str:
    return candidate.name


def rendezvous_score(key: str, node: str, weight: float) -> float:
    """Weighted rendezvous score of ``node`` for ``key``; higher wins."""
    digest = hashlib.sha256(f"{key}\x00{node}".encode()).digest()
    # 53 bits of the hash as a float strictly inside (0, 1).
    unit = (int.from_bytes(digest[:8], "big") >> 11) + 0.5
    u = unit / float(1 << 53)
    return -weight / math.log(u)
