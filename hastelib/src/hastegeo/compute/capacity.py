"""Why a submitted job waits for compute, and when waiting must stop. Pure: no SDK, no I/O.

A backend reports a :class:`CapacityWait` with a queued status: the
provider's reason in its own words made readable, and whether it can clear by
itself (a pool still allocating, a busy slot) or not without an operator (a
core quota reached on a pool that has no node, a pool that does not exist).
Which provider codes cannot clear is data, one :class:`CapacityTable` per
provider, the way :mod:`hastegeo.compute.retry` reads Batch's error table.

:func:`verdict` is the one decision the pipeline takes from it: keep waiting,
or move the job on now with one history line that says how long it waited,
where, and why (``waiting for compute on azure_batch for 30 min: pool gpu:
AccountCoreQuotaReached: …``).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from hastegeo.utils.redaction import redact


class CapacityClass(enum.StrEnum):
    WAITING = "waiting"  # may clear by itself: keep waiting until the backend's queue limit
    BLOCKED = "blocked"  # cannot clear without an operator: move on at once


class CapacityWait(BaseModel):
    """Why a queued job has no compute yet: ``reason`` (readable), and whether it cannot clear by itself."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    reason: str
    blocked: bool = False


@dataclass(frozen=True)
class CapacityTable:
    """Provider code → :class:`CapacityClass`; codes are matched case-insensitively, unknown ones wait."""

    codes: Mapping[str, CapacityClass] = field(default_factory=dict)
    default: CapacityClass = CapacityClass.WAITING

    def classify(self, code: str | None) -> CapacityClass:
        lowered = {key.lower(): kind for key, kind in self.codes.items()}
        return lowered.get((code or "").lower(), self.default)

    def wait(self, code: str | None, reason: str, *, clears_anyway: bool = False) -> CapacityWait:
        """A :class:`CapacityWait` for ``code``; ``clears_anyway``: the provider may still recover (a node exists)."""
        blocked = self.classify(code) is CapacityClass.BLOCKED and not clears_anyway
        return CapacityWait(reason=redact(reason), blocked=blocked)


def duration_text(seconds: float) -> str:
    """``45 s``, ``30 min``, ``2 h 5 min``: how long a job waited, for a history line."""
    seconds = max(0, int(seconds))
    if seconds < 120:
        return f"{seconds} s"
    minutes = seconds // 60
    if minutes < 120:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min" if minutes % 60 else f"{minutes // 60} h"


def waiting_text(wait: CapacityWait | None) -> str:
    """What a queued job records while it waits: the provider's reason, or that it gave none."""
    return wait.reason if wait is not None else "the provider has not started it yet"


def wait_line(backend: str, waited_s: float, wait: CapacityWait | None) -> str:
    """``waiting for compute on <backend> for <duration>: <reason>``."""
    return f"waiting for compute on {backend} for {duration_text(waited_s)}: {waiting_text(wait)}"


def verdict(backend: str, waited_s: float, limit_s: float, wait: CapacityWait | None) -> str | None:
    """The one line to move a queued job on with, or None to keep waiting.

    Moves on when the job waited longer than ``limit_s`` (the backend's queue
    limit), or at once when the provider's reason cannot clear by itself.
    """
    if waited_s > limit_s:
        return wait_line(backend, waited_s, wait) + f" (over the {duration_text(limit_s)} queue limit)"
    if wait is not None and wait.blocked:
        return wait_line(backend, waited_s, wait) + " (this cannot clear by itself)"
    return None


def limit_reason(project: str, running: int, limit: int, where: str = "") -> str | None:
    """Why a job of ``project`` waits (``project p1 has 20 of 20 running jobs``), or None under the limit."""
    if limit > 0 and running >= limit:
        return f"project {project or '(none)'} has {running} of {limit} running jobs{where}"
    return None
