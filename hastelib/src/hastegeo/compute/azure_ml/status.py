"""Azure ML job status → :class:`ComputeStatus`. Pure: no SDK import, no I/O.

Every status azure-ai-ml documents is mapped explicitly; an unknown string
stays non-terminal (the pipeline's run deadline ends it) rather than being
guessed as success or failure. ``Canceled`` is cancelled, never success.
``NotResponding`` and ``Paused`` are non-terminal: the job may recover, and
the pipeline's deadline decides when waiting stops; the state is put in
``detail`` so the history shows it.
"""

from __future__ import annotations

from typing import Any

from hastegeo.compute.capacity import CapacityWait
from hastegeo.compute.contract import ComputeState, ComputeStatus

_QUEUED = {
    "NotStarted": "not started",
    "Starting": "starting",
    "Provisioning": "provisioning compute",
    "Preparing": "preparing the environment image",
    "Queued": "queued for compute",
}
_RUNNING = {
    "Running": "running",
    "Finalizing": "finalizing outputs",
    "CancelRequested": "cancel requested",
    "NotResponding": "not responding (waiting until the run deadline)",
    "Paused": "paused (waiting until the run deadline)",
    "Unknown": "status unknown (waiting until the run deadline)",
}
QUEUED_STATUSES = frozenset(_QUEUED)
TERMINAL_STATUSES = frozenset({"Completed", "Failed", "Canceled"})
ALL_STATUSES = frozenset({*_QUEUED, *_RUNNING, *TERMINAL_STATUSES})


def status_text(value: Any) -> str:
    """Normalise ``job.status`` (a str-enum, a plain str, or None) to its wire string."""
    if value is None:
        return "Unknown"
    return str(getattr(value, "value", value))


def map_status(status: Any, *, failure: str | None = None, capacity: CapacityWait | None = None) -> ComputeStatus:
    """Translate an Azure ML job status into the backend-neutral :class:`ComputeStatus`.

    ``failure`` is the readable ``Code: message`` of a failed job, when known; ``capacity``: why a
    queued job has no compute yet (its run details), when known.
    """
    text = status_text(status)
    if text == "Completed":
        return ComputeStatus(state=ComputeState.SUCCEEDED, exit_code=0, detail="Azure ML: Completed")
    if text == "Failed":
        return ComputeStatus(
            state=ComputeState.FAILED,
            reason=failure or "Azure ML reported the job Failed without error details",
            detail="Azure ML: Failed",
        )
    if text == "Canceled":
        return ComputeStatus(
            state=ComputeState.CANCELLED, reason="The Azure ML job was canceled", detail="Azure ML: Canceled"
        )
    if text in _QUEUED:
        detail = f"Azure ML: {text} ({_QUEUED[text]})" + (f": {capacity.reason}" if capacity else "")
        return ComputeStatus(state=ComputeState.QUEUED, detail=detail, capacity=capacity)
    if text in _RUNNING:
        return ComputeStatus(state=ComputeState.RUNNING, detail=f"Azure ML: {text} ({_RUNNING[text]})")
    return ComputeStatus(
        state=ComputeState.RUNNING, detail=f"Azure ML: unrecognised status {text!r} (waiting until the run deadline)"
    )
