"""Why a Batch task waits for a node: the pool's resize errors and node counts, read as data. Pure.

Batch tells a waiting task nothing; its pool does. A pool whose last resize
failed carries ``resizeErrors`` (codes from Batch's ``PoolResizeErrorCodes``:
``AccountCoreQuotaReached``, ``AllocationFailed``, ``AllocationTimedOut``, …);
a pool with a fixed size of zero never runs anything; a pool with nodes runs
the task once one is free. A code in :data:`BATCH_CAPACITY` marked blocked
cannot clear without an operator (a quota raised, an image fixed), so a job on
a pool that has no node and that error moves on at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hastegeo.compute.azure_batch.status import enum_text
from hastegeo.compute.capacity import CapacityClass, CapacityTable, CapacityWait
from hastegeo.utils.errors import readable_message

BLOCKED = CapacityClass.BLOCKED
BATCH_CAPACITY = CapacityTable(
    codes={
        **dict.fromkeys(
            (
                "AccountCoreQuotaReached",
                "AccountLowPriorityCoreQuotaReached",
                "AccountSpotCoreQuotaReached",
                "AccountVMFamilyCoreQuotaReached",  # not in the SDK's list, but quota all the same
                "PoolQuotaReached",
                "PoolNotFound",
                "IncompatibleVMSize",
                "DependentResourceNotFound",
                "FailedIdentityOperation",
                "DiskEncryptionFailure",
                "MissingPublisherPropertyInMarketPlacePlan",
                "ImageNotFound",
                "InvalidImage",
                "ResizeStopped",
            ),
            BLOCKED,
        ),
        # AllocationFailed, AllocationTimedOut, RemoveNodesFailed, Unknown: the next resize may succeed.
    }
)


@dataclass(frozen=True)
class ResizeProblem:
    code: str
    message: str


@dataclass(frozen=True)
class PoolView:
    """The facts of a Batch pool that say why a task waits, free of SDK types."""

    pool_id: str
    allocation_state: str = "steady"  # steady | resizing | stopping
    current_nodes: int = 0  # dedicated and low-priority
    target_nodes: int = 0
    auto_scale: bool = False
    resize_errors: tuple[ResizeProblem, ...] = ()


def pool_view(pool: Any, pool_id: str) -> PoolView:
    """Extract a :class:`PoolView` from an ``azure.batch.models.BatchPool`` (matched by shape)."""
    errors = tuple(
        ResizeProblem(
            str(getattr(error, "code", "") or "Unknown"), readable_message(getattr(error, "message", "") or "")
        )
        for error in getattr(pool, "resize_errors", None) or ()
    )
    return PoolView(
        pool_id=pool_id,
        allocation_state=enum_text(getattr(pool, "allocation_state", None)) or "steady",
        current_nodes=int(getattr(pool, "current_dedicated_nodes", 0) or 0)
        + int(getattr(pool, "current_low_priority_nodes", 0) or 0),
        target_nodes=int(getattr(pool, "target_dedicated_nodes", 0) or 0)
        + int(getattr(pool, "target_low_priority_nodes", 0) or 0),
        auto_scale=bool(getattr(pool, "enable_auto_scale", False)),
        resize_errors=errors,
    )


def pool_wait(view: PoolView) -> CapacityWait:
    """Why a task on this pool waits, and whether that can clear by itself."""
    prefix = f"pool {view.pool_id}"
    nodes = view.current_nodes > 0  # with a node, a task runs once one is free: that always clears
    if view.resize_errors:
        first = view.resize_errors[0]
        reason = f"{prefix}: {first.code}: {first.message}" if first.message else f"{prefix}: {first.code}"
        if nodes:
            reason += f" (it has {view.current_nodes} node{'s' if view.current_nodes != 1 else ''}, all busy)"
        return BATCH_CAPACITY.wait(first.code, reason, clears_anyway=nodes)
    if view.target_nodes == 0 and view.current_nodes == 0:
        if view.auto_scale:
            return CapacityWait(reason=f"{prefix} has no node; its autoscale formula has not asked for one yet")
        return CapacityWait(reason=f"{prefix} is sized to zero nodes and does not autoscale", blocked=True)
    if view.current_nodes < view.target_nodes or view.allocation_state == "resizing":
        return CapacityWait(reason=f"{prefix} is allocating nodes ({view.current_nodes} of {view.target_nodes})")
    return CapacityWait(reason=f"{prefix}: all {view.current_nodes} nodes busy")


def pool_missing(pool_id: str) -> CapacityWait:
    """The task's pool does not exist: nothing will ever run it."""
    return BATCH_CAPACITY.wait("PoolNotFound", f"pool {pool_id} does not exist")
