"""Job groups (ADR 0040): what a client asks for (:class:`GroupRequest`) and what the server keeps (:class:`Group`).

A group is one request for many jobs: a shared part and ``items``, each item's own
parameters, inputs, labels and ``after``. Its items become ordinary jobs whose ids are
derived from the group's id, the item's index and the item's attempt (:func:`item_job_id`),
so making them twice makes nothing twice.

The stored :class:`Group` keeps one character per item (:data:`MARKS`): the item's latest
known state, as the journal last wrote it. Counts are computed from that string, so a
write that repeats an item's state counts nothing twice, and an item whose state write was
lost is repaired by writing its state again (never by adding one).
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections import Counter
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from hastegeo.models.ids import ID_PATTERN
from hastegeo.models.job import (
    CORRELATION_ID_PATTERN,
    BackendChoice,
    JobInput,
    JobRequest,
    Submitter,
    Workload,
    after_field,
    check_after,
    check_labels,
    labels_field,
    profile_field,
)
from hastegeo.models.states import JobState

MAX_ITEMS = 10_000
FAILURES_KEPT = 20

# One character per item: its latest known state. ``.`` not made yet.
MARKS: dict[JobState, str] = {
    JobState.QUEUED: "q",
    JobState.SUBMITTING: "r",
    JobState.RUNNING: "r",
    JobState.CANCEL_REQUESTED: "r",
    JobState.POSTPROCESSING: "r",
    JobState.SUCCEEDED: "s",
    JobState.FAILED: "f",
    JobState.CANCELLED: "c",
}
NOT_MADE = "."
COUNT_NAMES = {"q": "queued", "r": "running", "s": "succeeded", "f": "failed", "c": "cancelled", ".": "notMade"}
_RANK = {".": 0, "q": 1, "r": 2, "s": 3, "f": 3, "c": 3}
ENDED_MARKS = frozenset("sfc")


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, alias_generator=to_camel, extra="forbid")


class GroupItem(_Model):
    """One item: what it adds to the group's shared part."""

    parameters: dict[str, Any] = Field(default_factory=dict, description="Merged over the group's parameters.")
    inputs: list[JobInput] = Field(default_factory=list, max_length=500, description="Added to the group's inputs.")
    labels: dict[str, str] = labels_field()
    after: list[str] = after_field("Jobs or groups (ids, same project) this job waits for")
    profile: str | None = profile_field()

    @field_validator("after")
    @classmethod
    def _ids(cls, value: list[str]) -> list[str]:
        return check_after(value)

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: dict[str, str]) -> dict[str, str]:
        return check_labels(value)


class GroupRequest(_Model):
    """The body of ``POST /api/groups`` (and of a ``jobs-requests`` message carrying ``items``)."""

    workload: Workload
    project_id: str = Field(pattern=ID_PATTERN, description="Project the group and its jobs belong to.")
    backend: BackendChoice | None = Field(None, description="auto, or a backend name; default from settings.")
    profile: str | None = profile_field()
    inputs: list[JobInput] = Field(default_factory=list, max_length=500, description="Inputs every item gets.")
    parameters: dict[str, Any] = Field(default_factory=dict, description="Parameters every item gets.")
    labels: dict[str, str] = labels_field()
    after: list[str] = after_field("Jobs or groups (ids, same project) this job waits for")
    correlation_id: str | None = Field(None, pattern=CORRELATION_ID_PATTERN)
    items: list[GroupItem] = Field(min_length=1, max_length=MAX_ITEMS, description=f"1 to {MAX_ITEMS} items.")

    @field_validator("after")
    @classmethod
    def _ids(cls, value: list[str]) -> list[str]:
        return check_after(value)

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: dict[str, str]) -> dict[str, str]:
        return check_labels(value)

    def fingerprint(self) -> str:
        """What makes a replay the same request: its JSON, without a ``profile`` nobody named (a field
        added later, so a request without one keeps the fingerprint it had before)."""
        exclude: dict[str, Any] = {"profile": True} if self.profile is None else {}
        unnamed = {index: {"profile"} for index, item in enumerate(self.items) if item.profile is None}
        if unnamed:
            exclude["items"] = unnamed
        return hashlib.sha256(self.model_dump_json(exclude=exclude or None).encode()).hexdigest()

    def item_request(self, index: int) -> JobRequest:
        """The job request of item ``index``: the shared part with the item's own over it.

        Raises pydantic's ValidationError when the merge is not a valid job request (labels too many).
        """
        item = self.items[index]
        return JobRequest(
            workload=self.workload,
            project_id=self.project_id,
            backend=self.backend,
            profile=item.profile or self.profile,
            inputs=[*self.inputs, *item.inputs],
            parameters={**self.parameters, **item.parameters},
            labels={**self.labels, **item.labels},
            after=list(dict.fromkeys([*self.after, *item.after])),
            correlation_id=self.correlation_id,
        )


class Failure(_Model):
    index: int
    job_id: str
    state: JobState
    reason: str | None = None


class Group(_Model):
    """The stored truth about a group. Updated only with ETag-conditional writes."""

    model_config = ConfigDict(populate_by_name=True, alias_generator=to_camel, extra="ignore")

    id: str
    project_id: str
    workload: str
    item_count: int
    marks: str = Field("", description="One character per item: its latest known state.")
    attempts: dict[str, int] = Field(default_factory=dict, description="Item index → attempt, for retried items.")
    failures: list[Failure] = Field(default_factory=list)
    created_at: datetime
    updated_at: datetime
    made_at: datetime | None = None
    completed_at: datetime | None = None
    completion_published: bool = False
    cancel_requested: bool = False
    cancel_requested_at: datetime | None = Field(
        None, description="When the cancel was asked for, or last sent again by the reconciler."
    )
    submitted_by: Submitter | None = None
    correlation_id: str | None = None
    request_fingerprint: str = ""
    request_key: str | None = None

    def attempt(self, index: int) -> int:
        return self.attempts.get(str(index), 0)

    def job_id(self, index: int) -> str:
        return item_job_id(self.id, index, self.attempt(index))

    def counts(self) -> dict[str, int]:
        found = Counter(self.marks)
        return {name: found.get(mark, 0) for mark, name in COUNT_NAMES.items()}

    @property
    def made(self) -> int:
        """Items made into jobs (or ended before they were made)."""
        return self.item_count - self.marks.count(NOT_MADE)

    @property
    def ended(self) -> int:
        """Items that ended (succeeded, failed or cancelled)."""
        return sum(1 for mark in self.marks if mark in ENDED_MARKS)

    @property
    def complete(self) -> bool:
        """Every item made and ended."""
        return all(mark in ENDED_MARKS for mark in self.marks)

    @property
    def succeeded(self) -> bool:
        return self.complete and set(self.marks) <= {"s"}

    def marked(
        self, index: int, attempt: int, state: JobState, job_id: str, reason: str | None, now: datetime
    ) -> Group | None:
        """The group with item ``index`` (attempt ``attempt``) in ``state``; None when that changes nothing.

        A stale attempt (an item retried since) or a move back (a late write of an earlier state) is ignored.
        """
        if not 0 <= index < self.item_count or attempt != self.attempt(index):
            return None
        mark, old = MARKS[state], self.marks[index]
        if mark == old or _RANK[mark] < _RANK[old]:
            return None
        update: dict[str, Any] = {"marks": self.marks[:index] + mark + self.marks[index + 1 :], "updated_at": now}
        if mark in "fc" and len(self.failures) < FAILURES_KEPT:
            update["failures"] = [*self.failures, Failure(index=index, job_id=job_id, state=state, reason=reason)]
        group = self.model_copy(update=update)
        if group.complete and group.completed_at is None:
            group = group.model_copy(update={"completed_at": now})
        return group

    def view(self) -> dict[str, Any]:
        """The JSON a client sees."""
        counts = self.counts()
        ended = self.ended
        state = "completed" if self.completed_at else ("cancelling" if self.cancel_requested else "open")
        return {
            "id": self.id,
            "projectId": self.project_id,
            "workload": self.workload,
            "state": state,
            "itemCount": self.item_count,
            "made": self.made,
            "counts": counts,
            "progress": round(ended / self.item_count, 4) if self.item_count else 1.0,
            "failures": [f.model_dump(mode="json", by_alias=True) for f in self.failures],
            "submittedBy": None
            if self.submitted_by is None
            else self.submitted_by.model_dump(mode="json", by_alias=True),
            "correlationId": self.correlation_id,
            "createdAt": self.created_at.isoformat(),
            "madeAt": self.made_at.isoformat() if self.made_at else None,
            "completedAt": self.completed_at.isoformat() if self.completed_at else None,
            "links": {"jobs": f"/api/jobs?groupId={self.id}"},
        }


def completes(prior: Group, result: Group | None) -> bool:
    """Whether the change that made ``result`` (None: changed nothing) of ``prior`` is the one that completed the
    group: a group is announced once, by that change's caller."""
    return result is not None and prior.completed_at is None and result.completed_at is not None


def new_group_id() -> str:
    return f"g{time.time_ns() // 1_000_000:011x}{secrets.token_hex(5)}"


def keyed_group_id(project_id: str, idempotency_key: str) -> str:
    return "g" + hashlib.sha256(f"group\x00{project_id}\x00{idempotency_key}".encode()).hexdigest()[:21]


def item_job_id(group_id: str, index: int, attempt: int = 0) -> str:
    """The job of item ``index`` of group ``group_id`` (its ``attempt``-th retry): the same every time."""
    return f"{group_id}-{index}" + (f"-r{attempt}" if attempt else "")


def is_group_id(value: str) -> bool:
    return value.startswith("g") and "-" not in value
