"""What a client asks for (:class:`JobRequest`) and what the server keeps (:class:`Job`).

The request model forbids unknown fields. Fields that exist on :class:`Job`
but not on the request are server-owned; :func:`server_owned_fields_in`
finds them in a raw body so the API can name them in its 400 instead of
calling them "extra".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, PydanticCustomError

from hastegeo.compute.catalog import backend_names
from hastegeo.compute.contract import ComputeJobHandle
from hastegeo.costs.attribution import Cost
from hastegeo.costs.usage import JobUsage
from hastegeo.models.changes import StateChange
from hastegeo.models.history import StatusEvent
from hastegeo.models.ids import ID_PATTERN, is_id
from hastegeo.models.params import member_error
from hastegeo.models.paths import check_relative_path
from hastegeo.models.states import JobState
from hastegeo.profiles import DEFAULT_PROFILE, NAME_PATTERN
from hastegeo.workloads.registry import workload_names


def _known_backend(value: str) -> str:
    """``auto`` or a backend some descriptor names (built in or installed): the list is never copied here."""
    names = backend_names()
    if value != "auto" and value not in names:
        raise ValueError(f"must be 'auto' or one of {', '.join(repr(name) for name in names)}")
    return value


BackendChoice = Annotated[str, AfterValidator(_known_backend)]


def after_field(description: str) -> Any:
    """A request's ``after`` (a job's, a group's, an item's): at most 50 ids, as :func:`check_after` checks."""
    return Field(default_factory=list, max_length=MAX_AFTER, description=f"{description}; at most {MAX_AFTER}.")


def labels_field() -> Any:
    """A request's ``labels`` (a job's, a group's, an item's): at most 20, keys and values as
    :func:`check_labels` checks them, and as the document says (the check itself names the bad one)."""
    return Field(
        default_factory=dict,
        max_length=20,
        json_schema_extra={
            "propertyNames": {"pattern": f"^{LABEL_KEY_BODY}$"},
            "additionalProperties": {"type": "string", "maxLength": MAX_LABEL_VALUE},
        },
    )


def profile_field() -> Any:
    """A request's ``profile``: the name of a compute profile its backend offers to its workload (ADR 0043)."""
    return Field(
        None,
        pattern=NAME_PATTERN,
        description="The compute profile to run on (GET /api/backends lists each backend's); default: 'default', "
        "the workload's own compute.",
        # No "default" in the schema: generated typed clients then keep it optional, and code built against
        # the schema before profiles still compiles (a generator makes a field with a default required).
        json_schema_extra=_no_schema_default,
    )


def _no_schema_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


def _known_workload(value: object) -> object:
    """A workload some folder declares (docs/adr/0037), anything else refused as a ``Literal`` of them would be."""
    names = workload_names()
    if value not in names:
        quoted = [repr(name) for name in names]
        expected = quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"
        raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": expected})
    return value


class _WorkloadEnum:
    """Names the known workloads as the JSON Schema ``enum`` (OpenAPI), read from the registry when it is built."""

    def __get_pydantic_json_schema__(self, core_schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        schema = handler(core_schema)
        schema["enum"] = list(workload_names())
        return schema


# The workload names are derived from the registry, never copied: a new workload folder is accepted here.
Workload = Annotated[str, BeforeValidator(_known_workload), _WorkloadEnum()]

LABEL_KEY_BODY = r"[A-Za-z0-9_.\-]{1,63}"
_LABEL_KEY = re.compile(LABEL_KEY_BODY)
MAX_LABEL_VALUE = 256
MAX_AFTER = 50
# What an upstream service correlates by: printable ASCII without spaces, returned in every job event.
CORRELATION_ID_PATTERN = r"^[!-~]{1,128}$"
# A job lists at most this many retries (the newest are dropped from the list, not refused).
RETRIES_LISTED = 50


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, alias_generator=to_camel, extra="forbid")


class JobInput(_Model):
    """One input: a blob in the inputs container, or the outputs of an earlier job."""

    blob: str | None = Field(None, description="Blob name in the inputs container.", max_length=1024)
    job_id: str | None = Field(None, description="Use this job's outputs/ as input.", pattern=ID_PATTERN)
    dest: str | None = Field(None, description="Name under inputs/ (default: the blob's name).", max_length=256)

    @field_validator("blob", "dest")
    @classmethod
    def _relative(cls, value: str | None) -> str | None:
        return None if value is None else check_relative_path(value)

    @model_validator(mode="after")
    def _exactly_one(self) -> JobInput:
        if (self.blob is None) == (self.job_id is None):
            raise ValueError("set exactly one of 'blob' or 'jobId'")
        return self


class JobRequest(_Model):
    """The body of ``POST /api/jobs`` and of a ``jobs-requests`` queue message."""

    workload: Workload
    project_id: str = Field(pattern=ID_PATTERN, description="Project the job belongs to.")
    backend: BackendChoice | None = Field(None, description="auto, or a backend name; default from settings.")
    profile: str | None = profile_field()
    inputs: list[JobInput] = Field(default_factory=list, max_length=500)
    parameters: dict[str, Any] = Field(default_factory=dict, description="Workload-specific parameters.")
    labels: dict[str, str] = labels_field()
    correlation_id: str | None = Field(
        None,
        pattern=CORRELATION_ID_PATTERN,
        description="The caller's correlation id (1-128 printable ASCII characters), returned in every job event.",
    )
    after: list[str] = after_field("Jobs or groups of the same project this job waits for (ADR 0040)")

    @field_validator("after")
    @classmethod
    def _after_ids(cls, value: list[str]) -> list[str]:
        return check_after(value)

    @field_validator("labels")
    @classmethod
    def _small_labels(cls, value: dict[str, str]) -> dict[str, str]:
        return check_labels(value)


def check_labels(value: dict[str, str]) -> dict[str, str]:
    """Labels of a job, a group or an item: a bad one is refused at its path (``labels.<key>``)."""
    for key, val in value.items():
        if not _LABEL_KEY.fullmatch(key) or len(val) > MAX_LABEL_VALUE:
            raise member_error(f".{key}", "keys are 1-63 of [A-Za-z0-9_.-], values at most 256 characters")
    return value


def check_after(value: list[str]) -> list[str]:
    """The ids a job or a group waits for, each named once; an item that is not an id is refused at its path."""
    for index, name in enumerate(value):
        if not is_id(name):
            raise member_error(f"[{index}]", "not a job or group id")
    return list(dict.fromkeys(value))


class OutputRecord(_Model):
    name: str = Field(description="Path relative to the job's output prefix, e.g. outputs/artifacts.zip")
    blob: str = Field(description="container/blob of the stored copy")
    size: int
    sha256: str | None = None


class Submitter(_Model):
    """Who asked for a job: a display name and an Entra object id, never a credential.

    Taken from the authenticated caller; a follow-on keeps its parent's submitter, and a request
    from the upstream queue (which carries no identity) names the queue.
    """

    name: str = Field(max_length=200)
    object_id: str | None = Field(None, max_length=200)

    def describe(self) -> str:
        """``name (oid …)`` for a history line."""
        return f"{self.name} (oid {self.object_id})" if self.object_id else self.name


class Attempts(_Model):
    submit: int = 0
    poll: int = 0


class QueuedMessage(_Model):
    """A queue message the pipeline sent and may delete before it arrives: its id and pop receipt."""

    id: str
    receipt: str


# Bookkeeping the pipeline keeps on the job and clients never see.
INTERNAL_FIELDS = frozenset(
    {
        "request_fingerprint",
        "poll_seq",
        "poll_message",
        "poll_due_at",
        "due_entry",
        "detail",
        "idempotency_key",
        "progress_offset",
        "trace_parent",
        "moving",
        "state_changes",
        "events_published",
        "request_key",
        "has_dependents",
        "release_due",
        "usage",
    }
)


class Job(_Model):
    """The stored truth about one job. Updated only with ETag-conditional writes."""

    model_config = ConfigDict(populate_by_name=True, alias_generator=to_camel, extra="ignore")

    id: str
    project_id: str
    workload: Workload
    state: JobState
    requested_backend: BackendChoice
    backend: str
    profile: Annotated[str, BeforeValidator(lambda value: value or DEFAULT_PROFILE)] = Field(
        DEFAULT_PROFILE, description="The compute profile it runs on (ADR 0043)."
    )
    inputs: list[JobInput] = Field(default_factory=list)
    parameters: dict[str, Any] = Field(default_factory=dict)
    labels: dict[str, str] = Field(default_factory=dict)
    handle: ComputeJobHandle | None = None
    outputs: list[OutputRecord] = Field(default_factory=list)
    reason: str | None = Field(None, description="Readable cause of a failure or cancellation.")
    last_error: str | None = Field(
        None,
        description="The latest retried error while a step keeps failing (cleared once it succeeds).",
    )
    progress: float | None = None
    detail: str | None = Field(None, description="The provider's latest readable note, for change detection.")
    created_at: datetime
    updated_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    deadline_at: datetime
    attempts: Attempts = Field(default_factory=Attempts)
    poll_seq: int = 0
    poll_message: QueuedMessage | None = Field(
        None, description="The poll chain's pending message, deleted once the job ends before it arrives."
    )
    # Beside poll_message, not in it: a record read by the release before this field ignores an unknown
    # member of the job, where one inside poll_message would fail its validation.
    poll_due_at: datetime | None = Field(
        None, description="When the pending poll message is due: the reconciler leaves the chain alone until then."
    )
    due_entry: str | None = Field(
        None, description="The job's entry in the reconciler's due index (store/due.py), set by the store's writes."
    )
    progress_offset: int = Field(0, description="Bytes of the progress log already copied into the history.")
    history: list[StatusEvent] = Field(default_factory=list)
    history_folded: int = 0
    parent_job_id: str | None = None
    submitted_by: Submitter | None = Field(None, description="Who submitted the job; set by the server.")
    request_fingerprint: str = ""
    idempotency_key: str | None = None
    summary: dict[str, Any] = Field(default_factory=dict, description="Figures from post-processing.")
    backends_left: list[str] = Field(
        default_factory=list, description="Backends this job left, in order, because their compute did not come."
    )
    waiting_for_compute: str | None = Field(
        None, description="Why the provider has not started it yet, while it waits (its own words made readable)."
    )
    moving: str | None = Field(None, description="Why the job is leaving its backend, until its provider job is gone.")
    trace_parent: str | None = Field(None, description="W3C traceparent of the span that accepted the job.")
    correlation_id: str | None = Field(None, description="The request's correlation id, returned in every job event.")
    retry_of: str | None = Field(None, description="The failed or cancelled job this one retries.")
    resume_from: str | None = Field(
        None, description="The job (of this project) whose latest checkpoint this one starts from (ADR 0044)."
    )
    retries: list[str] = Field(
        default_factory=list, description=f"Jobs that retry this one, oldest first (at most {RETRIES_LISTED})."
    )
    request_key: str | None = Field(None, description="The Idempotency-Key as sent, for the job events.")
    state_changes: list[StateChange] = Field(default_factory=list, description="Numbered state changes (events).")
    events_published: int = Field(0, description="The sequence number up to which events are published.")
    after: list[str] = Field(default_factory=list, description="Jobs or groups this job waits for (ADR 0040).")
    waiting_for: list[str] = Field(
        default_factory=list, description="Of ``after``, those that have not succeeded yet: the job is not submitted."
    )
    group_id: str | None = Field(None, description="The group this job is an item of.")
    group_index: int | None = Field(None, description="Its index in the group's items.")
    group_attempt: int = Field(0, description="Which run of its group item this is (a group retry adds one).")
    has_dependents: bool = Field(False, description="Some job waits for this one: its end lists them (ADR 0040).")
    release_due: bool = Field(
        False,
        description="An upstream it waits for had ended badly when it was stored: its due entry is due at once, "
        "so the next sweep ends it should its acceptor not (ADR 0047).",
    )
    usage: JobUsage | None = Field(None, description="The runs of its compute its backends told of (costs/usage.py).")
    cost: Cost | None = Field(
        None, description="What its compute cost, set by the write that ends it (amount null: not known, and why)."
    )

    def request(self) -> JobRequest:
        """The request this job was made from (what a retry submits again)."""
        return JobRequest(
            workload=self.workload,
            project_id=self.project_id,
            backend=self.requested_backend,
            profile=None if self.profile == DEFAULT_PROFILE else self.profile,
            inputs=self.inputs,
            parameters=self.parameters,
            labels=self.labels,
            correlation_id=self.correlation_id,
            after=self.after,
        )

    def api_view(self) -> dict[str, Any]:
        """The JSON a client sees: camelCase, without internal bookkeeping."""
        return self.model_dump(
            mode="json",
            by_alias=True,
            exclude=set(INTERNAL_FIELDS),
        )

    def summary_view(self) -> dict[str, Any]:
        """A list item: :meth:`api_view` with the latest event in place of the history (lists stay small)."""
        view = self.api_view()
        del view["history"], view["historyFolded"]
        view["lastEvent"] = self.history[-1].model_dump(mode="json", by_alias=True) if self.history else None
        return view


def _aliases(model: type[BaseModel]) -> set[str]:
    names = set()
    for name, field in model.model_fields.items():
        names.add(name)
        if field.alias:
            names.add(field.alias)
    return names


SERVER_OWNED_FIELDS: frozenset[str] = frozenset(
    sorted(
        {field.alias or name for name, field in Job.model_fields.items()}
        - {field.alias or name for name, field in JobRequest.model_fields.items()}
    )
)


# Server-owned names in both spellings (``createdAt`` and ``created_at``), so neither slips through.
_OWNED_ANY_SPELLING: frozenset[str] = frozenset(_aliases(Job) - _aliases(JobRequest))


def server_owned_fields_in(body: Mapping[str, Any]) -> list[str]:
    """The keys of ``body`` that only the server may set, in camelCase, sorted."""
    return sorted(
        Job.model_fields[key].alias or key if key in Job.model_fields else key
        for key in body
        if key in _OWNED_ANY_SPELLING
    )
