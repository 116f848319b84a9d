"""Batch task state → :class:`ComputeStatus`. Pure: the adapter extracts a :class:`TaskView` and calls this."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hastegeo.compute.capacity import CapacityWait
from hastegeo.compute.contract import ComputeState, ComputeStatus
from hastegeo.compute.tail import with_stderr
from hastegeo.utils.errors import readable_message
from hastegeo.utils.redaction import redact

CANCEL_REASON = "HasteCancelled"
# The generic failure Batch reports for a non-zero exit: the exit code already says it.
_GENERIC_FAILURE_CODES = frozenset({"failureexitcode"})


def enum_text(value: Any) -> str:
    """Enum values come back in varying case (``TaskCompletion``): compare lowercased ``.value``."""
    return str(getattr(value, "value", value) or "").lower()


@dataclass(frozen=True)
class TaskView:
    """The facts of a Batch task that status needs, free of SDK types."""

    state: str  # active | preparing | running | completed
    exit_code: int | None = None
    result: str | None = None  # success | failure
    failure_code: str | None = None
    failure_message: str | None = None
    retry_count: int = 0
    requeue_count: int = 0

    @property
    def completed(self) -> bool:
        return self.state == "completed"

    @property
    def failed(self) -> bool:
        return self.completed and (
            self.result == "failure" or bool(self.failure_code) or (self.exit_code not in (None, 0))
        )


def task_view(task: Any) -> TaskView:
    """Extract a :class:`TaskView` from an ``azure.batch.models.BatchTask`` (matched by shape)."""
    info = getattr(task, "execution_info", None)
    failure = getattr(info, "failure_info", None)
    return TaskView(
        state=enum_text(getattr(task, "state", None)) or "active",
        exit_code=getattr(info, "exit_code", None),
        result=enum_text(getattr(info, "result", None)) or None,
        failure_code=getattr(failure, "code", None),
        failure_message=getattr(failure, "message", None),
        retry_count=int(getattr(info, "retry_count", 0) or 0),
        requeue_count=int(getattr(info, "requeue_count", 0) or 0),
    )


def requeue_note(view: TaskView) -> str | None:
    """A readable line when the task ran more than once; attempt counts come from fields, never from logs."""
    notes = []
    if view.requeue_count:
        notes.append(f"task requeued after node preemption (retry {view.requeue_count})")
    if view.retry_count:
        notes.append(f"task retried after a failed attempt (retry {view.retry_count})")
    return "; ".join(notes) or None


def to_status(
    view: TaskView, *, stderr_tail: str | None = None, cancelled: bool = False, capacity: CapacityWait | None = None
) -> ComputeStatus:
    """Map a task to the backend-neutral status. ``cancelled``: the job was terminated by our cancel;
    ``capacity``: why an active task has no node (its pool's state)."""
    note = requeue_note(view)
    if view.state == "active":
        waiting = f"waiting for a node: {capacity.reason}" if capacity else "waiting for a node"
        return ComputeStatus(state=ComputeState.QUEUED, detail=_join(note, waiting), capacity=capacity)
    if view.state == "preparing":
        return ComputeStatus(state=ComputeState.QUEUED, detail=_join(note, "preparing the node"))
    if view.state == "running":
        return ComputeStatus(state=ComputeState.RUNNING, detail=_join(note, "running"))
    if not view.failed:
        return ComputeStatus(state=ComputeState.SUCCEEDED, exit_code=view.exit_code, detail=note)
    if cancelled:
        return ComputeStatus(state=ComputeState.CANCELLED, exit_code=view.exit_code, reason="cancelled", detail=note)
    return ComputeStatus(
        state=ComputeState.FAILED, exit_code=view.exit_code, reason=failure_reason(view, stderr_tail), detail=note
    )


def failure_reason(view: TaskView, stderr_tail: str | None) -> str:
    """``exit code 2: <last stderr lines>``, or ``<FailureCode>: <message>`` when the task never exited cleanly."""
    parts: list[str] = []
    if view.exit_code not in (None, 0):
        parts.append(f"exit code {view.exit_code}")
    if view.failure_code and view.failure_code.lower() not in _GENERIC_FAILURE_CODES:
        message = readable_message(view.failure_message or "")
        parts.append(f"{view.failure_code}: {message}" if message else view.failure_code)
    return redact(with_stderr("; ".join(parts) or "the task failed", stderr_tail))


def _join(*parts: str | None) -> str:
    return "; ".join(part for part in parts if part)
