"""Accept a job request: validate, route, persist, and only then enqueue a pointer.

Used by the HTTP API and by the upstream ``jobs-requests`` queue, so both
apply exactly the same rules. Nothing is stored or enqueued for a request
that is rejected.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sys
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from azure.core.exceptions import AzureError
from pydantic import BaseModel, ValidationError

from hastegeo.models.history import make_event
from hastegeo.models.ids import keyed_job_id, new_job_id
from hastegeo.models.job import Job, JobRequest, Submitter, server_owned_fields_in
from hastegeo.models.ownership import check_parameter_names, staged_inputs
from hastegeo.models.params import error_pairs
from hastegeo.models.states import JobState
from hastegeo.pipeline.after import WAITING_DEADLINE, Dependencies
from hastegeo.pipeline.deps import PipelineDeps
from hastegeo.profiles import DEFAULT_PROFILE
from hastegeo.store import due
from hastegeo.store.queues import ITEMS_SUBMIT_QUEUE, SUBMIT_QUEUE, JobMessage
from hastegeo.telemetry import meter, tracer
from hastegeo.telemetry.logs import job_fields
from hastegeo.utils.errors import ConflictError, HasteError, InvalidJobError, describe_exception
from hastegeo.utils.redaction import redact

log = logging.getLogger(__name__)

# A replayed request finds its job still queued after this long: its submit
# message was probably lost with a crash, so send it again.
REENQUEUE_AFTER_S = due.QUIET_S


class RequestRejected(Exception):
    """The request body is invalid. ``errors`` holds ``(field path, message)`` pairs."""

    def __init__(self, title: str, errors: list[tuple[str, str]]) -> None:
        super().__init__(title + ": " + "; ".join(f"{path}: {msg}" for path, msg in errors))
        self.title = title
        self.errors = errors


@dataclass(frozen=True)
class GroupSlot:
    """Where a job sits in its group: the group, the item's index and the item's attempt."""

    group_id: str
    index: int
    attempt: int = 0


@dataclass(frozen=True)
class Accepted:
    job: Job
    created: bool


MAX_JSON_DEPTH = 32
# Python refuses to read longer integers: say so in the body's words.
MAX_INT_DIGITS = sys.int_info.default_max_str_digits


def json_depth(value: Any) -> int:
    """Nesting depth of decoded JSON, computed without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
    return deepest


def decode_body(raw: bytes | str) -> Any:
    """Decode a JSON request body: UTF-8 (RFC 8259; a leading byte order mark is ignored), nothing else.

    Raises:
        RequestRejected: not JSON, not UTF-8 (UTF-16 and UTF-32 included), nested deeper than a job request
            ever is, naming a member twice in one object, or holding a lone surrogate (each such path).
    """
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8").removeprefix("\ufeff")
        except UnicodeDecodeError as exc:
            raise RequestRejected(
                "The body is not valid JSON", [("", f"not UTF-8: {exc.reason} at byte {exc.start}")]
            ) from None
    repeats: list[_Members] = []  # only a body that repeats a name is walked again, for the paths

    def members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        found = _Members.of(pairs)
        if found.repeated:
            repeats.append(found)
        return found

    try:
        decoded = json.loads(
            raw or "null",
            parse_constant=_no_constant,
            parse_float=_finite_float,
            parse_int=_whole_number,
            object_pairs_hook=members,
        )
    except RecursionError:
        raise RequestRejected("The body is nested too deeply", [("", f"at most {MAX_JSON_DEPTH} levels")]) from None
    except ValueError as exc:
        raise RequestRejected("The body is not valid JSON", [("", str(exc))]) from None
    if repeats:
        raise RequestRejected(
            "A member is named twice in one object",
            [
                (_short(path), "appears more than once in its object; send it once")
                for path in repeated_member_paths(decoded)
            ],
        )
    try:  # lone surrogates are valid JSON escapes but are not text: they cannot be stored as UTF-8
        json.dumps(decoded, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        paths = _surrogate_paths(decoded)
        raise RequestRejected(
            "The body holds text that is not Unicode",
            [(_short(path), "holds a lone surrogate (U+D800-U+DFFF); send whole characters") for path in paths],
        ) from None
    return decoded


class _Members(dict[str, Any]):
    """A decoded JSON object that remembers the names it was given more than once.

    JSON parsers disagree on a repeated name (Python keeps the last value, others the
    first), so a body that repeats one could mean one thing to a proxy or a log reader and
    another to this app: it is refused instead of read either way.
    """

    repeated: tuple[str, ...] = ()

    @classmethod
    def of(cls, pairs: list[tuple[str, Any]]) -> _Members:
        members = cls(pairs)
        if len(members) != len(pairs):
            members.repeated = tuple(name for name, count in Counter(name for name, _ in pairs).items() if count > 1)
        return members


def repeated_member_paths(body: Any) -> list[str]:
    """Paths (``parameters.bands``) of the names a decoded body repeats within one object."""
    return sorted(
        f"{path}.{name}" if path else name
        for item, path in _nodes(body)
        if isinstance(item, _Members)
        for name in item.repeated
    )


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text[:20]} is out of range")
    return value


def _whole_number(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {digits} digits; at most {MAX_INT_DIGITS}")
    return int(text)


def _surrogate_paths(body: Any) -> list[str]:
    """Paths of the strings and member names of a decoded body that hold a lone surrogate (shown escaped)."""

    def lone(text: str) -> bool:
        return any("\ud800" <= char <= "\udfff" for char in text)

    found = [path for item, path in _nodes(body) if isinstance(item, str) and lone(item)]
    found += [
        f"{path}.{name}" if path else name
        for item, path in _nodes(body)
        if isinstance(item, dict)
        for name in item
        if lone(name)
    ]
    return sorted({path.encode("utf-8", "backslashreplace").decode("utf-8") for path in found})


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def credential_paths(body: Any) -> list[str]:
    """Paths of string values that hold a credential (a SAS signature, key, token, connection string).

    Clients never send storage credentials: inputs name blobs, and the server signs what it hands out.
    """
    return sorted(path for item, path in _nodes(body) if isinstance(item, str) and redact(item) != item)


def _nodes(body: Any) -> Iterator[tuple[Any, str]]:
    """Every value of decoded JSON with its path (``inputs[0].blob``), without recursion."""
    stack = [(body, "")]
    while stack:
        item, path = stack.pop()
        yield item, path
        if isinstance(item, dict):
            stack.extend((v, f"{path}.{k}" if path else str(k)) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(item))


def check_body(body: Any, what: str, shown: int | None = None) -> Mapping[str, Any]:
    """``body`` if it is a JSON object of a sane depth holding no credential; ``what`` names it in the refusal.

    Raises RequestRejected naming the credentials' paths (the first ``shown`` of them; all by default).
    """
    if not isinstance(body, Mapping):
        raise RequestRejected("The body must be a JSON object", [("", "expected an object")])
    if json_depth(body) > MAX_JSON_DEPTH:
        raise RequestRejected("The body is nested too deeply", [("", f"at most {MAX_JSON_DEPTH} levels")])
    secrets = credential_paths(body)[:shown]
    if secrets:
        raise RequestRejected(
            f"Credentials cannot be sent in {what}",
            [(_short(path), "holds a credential (signature, key or token); name blobs instead") for path in secrets],
        )
    return body


def parse_request(body: Any) -> JobRequest:
    """Validate a decoded JSON body as a :class:`JobRequest`.

    Raises:
        RequestRejected: naming server-owned fields, or each invalid field's path.
    """
    check_body(body, "a job request")
    owned = server_owned_fields_in(body)
    if owned:
        raise RequestRejected(
            "Server-owned fields cannot be set by clients",
            [(name, "is set by the server and cannot be supplied") for name in owned],
        )
    try:
        return JobRequest.model_validate(dict(body))
    except ValidationError as exc:
        errors = [(_short(path), _short(message, 300)) for path, message in error_pairs(exc)]
        raise RequestRejected("The job request is invalid", errors) from None


class JobAcceptor:
    def __init__(self, deps: PipelineDeps) -> None:
        self._deps = deps

    def accept(
        self,
        request: JobRequest,
        *,
        idempotency_key: str | None = None,
        source: str = "api",
        parent: Job | None = None,
        submitter: Submitter | None = None,
        notes: Sequence[str] = (),
        retry_of: str | None = None,
        resume_from: str | None = None,
        job_id: str | None = None,
        group: GroupSlot | None = None,
    ) -> Accepted:
        """Store a new job (or return the one this idempotency key already created) and enqueue it.

        Once the job is stored it is accepted, whatever happens to its submit message: one
        that cannot be sent is logged, and the reconciler sends it once the job has been
        quiet for :data:`REENQUEUE_AFTER_S` (a replay after that sends it too; ADR 0031).

        A follow-on job (``parent`` given) runs on its parent's backend, links
        to it and keeps its submitter. Its inputs are checked like any others
        (every input inside the project, docs/adr/0008), except that the
        parent itself may still be post-processing.

        ``submitter`` is who asked (from the authenticated caller, or the queue);
        it is stored on the job and named in its first history line. ``notes`` are
        history lines about the request itself (a trace context that was dropped).
        ``retry_of`` is the job this one retries (:mod:`hastegeo.pipeline.rerun`); ``resume_from``, the job
        whose latest checkpoint it starts from.
        ``job_id`` and ``group``: the id and place of a group's item (:mod:`hastegeo.pipeline.groups`);
        an item made twice is stored once (the second call replays the first).

        A request with ``after`` (or a ``jobId`` input of a job that has not succeeded yet, an
        implicit ``after``) is stored waiting, without a submit message (:mod:`hastegeo.pipeline.after`).

        Raises:
            InvalidJobError: parameters or inputs cannot run (``field`` says where).
            BackendUnavailableError: the backend is unknown, disabled or unable.
            ConflictError: the idempotency key was used for a different request.
        """
        deps = self._deps
        processor = deps.processors.get(request.workload)
        if processor is None:
            raise InvalidJobError(f"workload: {request.workload!r} is not available", field="workload")
        processor.validate(request)
        # ``after`` and ``profile`` joined the request later: a request without them keeps the fingerprint
        # it had before.
        later = {name for name in ("after", "profile") if not getattr(request, name)}
        fingerprint = hashlib.sha256(request.model_dump_json(exclude=later or None).encode()).hexdigest()
        if job_id is None:
            job_id = keyed_job_id(request.project_id, idempotency_key) if idempotency_key else new_job_id()
        # A keyed request is stored with a conditional create and read only when the id is
        # taken: a new key (nearly every request) costs no read. A retry whose routing or
        # input checks now fail (a backend disabled since, an input deleted) still gets the
        # job its first attempt stored.
        requested = request.backend or deps.settings.routing.default_backend
        profile = request.profile or DEFAULT_PROFILE
        if parent is not None:
            requested = parent.backend
        try:
            backend = deps.router.resolve(requested, request.workload, job_id, profile)
            implicit = self._check_inputs(request, processor.params_model.model_validate(request.parameters), parent)
            after = list(dict.fromkeys([*request.after, *implicit]))
            upstreams = Dependencies(deps).resolve(request.project_id, request.after)
            upstreams += Dependencies(deps).resolve(request.project_id, implicit, field="inputs.jobId")
        except HasteError:
            existing = deps.store.find(job_id) if idempotency_key or group else None
            if existing is None:
                raise
            return self._replay(existing, fingerprint)
        if parent is not None:
            submitter = parent.submitted_by
        origin = f"accepted as a follow-on of {parent.id}" if parent is not None else f"accepted from {source}"
        if retry_of is not None:
            origin += f" as a retry of {retry_of}"
        if resume_from is not None:
            origin += f", resuming from the checkpoint of {resume_from}"
        if submitter is not None:
            origin += f", submitted by {submitter.describe()}"

        # The entries go before the document, then the upstreams are read again: one that ended meanwhile is
        # seen here, one that ends later finds the job's entry (ADR 0047).
        upstreams = Dependencies(deps).register(job_id, upstreams)
        now = deps.clock()
        waiting = [u for u in upstreams if not u.succeeded]
        if waiting:
            notes = [*notes, "waiting for " + ", ".join(u.describe() for u in waiting)]
        job = Job(
            id=job_id,
            project_id=request.project_id,
            workload=request.workload,
            state=JobState.QUEUED,
            requested_backend=requested,
            backend=backend,
            profile=profile,
            inputs=request.inputs,
            parameters=request.parameters,
            labels=request.labels,
            created_at=now,
            updated_at=now,
            deadline_at=now
            + (WAITING_DEADLINE if waiting else timedelta(seconds=deps.settings.pipeline.queued_deadline_s)),
            history=[
                make_event(
                    now,
                    JobState.QUEUED,
                    f"{origin}; runs on {backend}"
                    + (" (chosen by auto routing)" if requested == "auto" else "")
                    + (f" with profile {profile}" if profile != DEFAULT_PROFILE else ""),
                    source,
                ),
                *(make_event(now, JobState.QUEUED, note, source) for note in notes),
            ],
            request_fingerprint=fingerprint,
            idempotency_key=hashlib.sha256(idempotency_key.encode()).hexdigest() if idempotency_key else None,
            parent_job_id=parent.id if parent is not None else None,
            submitted_by=submitter,
            trace_parent=tracer.current_traceparent(),
            correlation_id=request.correlation_id,
            request_key=idempotency_key,
            retry_of=retry_of,
            resume_from=resume_from,
            after=after,
            waiting_for=[u.id for u in waiting],
            release_due=any(u.ended_badly for u in waiting),  # due at once: the next sweep ends it, if not below
            group_id=group.group_id if group else None,
            group_index=group.index if group else None,
            group_attempt=group.attempt if group else 0,
        )
        tracer.annotate(job)
        stored = deps.journal.create(job)
        if stored is None:  # an earlier (or concurrent) request with the same key stored it
            return self._replay(deps.store.get(job_id), fingerprint)
        job = stored.job
        if job.release_due:  # an upstream ended badly: it ends without running (or the next sweep ends it)
            try:
                job = Dependencies(deps).release(job.id) or job
            except (AzureError, ConflictError) as exc:
                log.info("job %s: not ended yet (%s); the reconciler's next pass ends it", job.id, exc)
        elif not job.waiting_for:
            self._send(job)
        meter.job_accepted(job)
        log.info("accepted job %s (%s on %s)", job_id, request.workload, backend, extra=job_fields(job))
        return Accepted(job=job, created=True)

    def _send(self, job: Job) -> None:
        """Send the stored job's submit message; one that cannot be sent now is left to the reconciler.

        The job is stored, so the request has succeeded: failing it now would tell a client
        without an Idempotency-Key to submit a second job, and one with a key would get back
        the job this request stored, no sooner started.
        """
        queue = SUBMIT_QUEUE if job.group_id is None else ITEMS_SUBMIT_QUEUE  # a group's items: their own line
        try:
            self._deps.queues.send(queue, JobMessage(job_id=job.id, kind="submit"))
        except AzureError as exc:
            log.warning(
                "job %s is stored but its submit message was not sent (%s); the reconciler sends it",
                job.id,
                describe_exception(exc),
                extra=job_fields(job),
            )

    def _replay(self, existing: Job, fingerprint: str) -> Accepted:
        if existing.request_fingerprint != fingerprint:
            raise ConflictError("This Idempotency-Key was already used for a different request")
        age = (self._deps.clock() - existing.created_at).total_seconds()
        if existing.state is JobState.QUEUED and existing.waiting_for:
            # The first attempt may have died before it looked again at upstreams that ended meanwhile (a
            # group's make message delivered again, a queue request, a keyed retry): look now.
            return Accepted(job=Dependencies(self._deps).release(existing.id) or existing, created=False)
        if existing.state is JobState.QUEUED and age > REENQUEUE_AFTER_S:
            # The first attempt may have stored the job and lost the enqueue; a
            # duplicate submit message is harmless, a missing one is not.
            self._send(existing)
        return Accepted(job=existing, created=False)

    def _check_inputs(self, request: JobRequest, params: BaseModel, parent: Job | None) -> list[str]:
        """Every input inside the request's project, earlier jobs not failed, parameters naming staged inputs.

        Returns the jobs named by ``jobId`` inputs that have not succeeded yet: the job waits for them.

        The inputs are staged exactly as the submit step will stage them (the same function), so
        what is admitted here is what runs. Raises InvalidJobError naming the field.
        """
        sources: dict[str, Job | None] = {}

        def find(job_id: str) -> Job | None:
            if job_id not in sources:
                sources[job_id] = self._deps.store.find(job_id)
            return sources[job_id]

        def project_of(job_id: str) -> str | None:
            found = find(job_id)
            return None if found is None else found.project_id

        where = self._deps.spec_inputs
        staged_inputs(
            request.project_id,
            request.inputs,
            inputs_container=where.inputs_container,
            outputs_container=where.outputs_container,
            project_of=project_of,
        )
        implicit = []
        for index, item in enumerate(request.inputs):
            if item.job_id is None or (parent is not None and item.job_id == parent.id):
                continue  # a parent is still post-processing when its follow-ons start
            source = find(item.job_id)
            if source is not None and not source.state.terminal:
                implicit.append(item.job_id)  # an implicit ``after`` (ADR 0040)
            elif source is not None and source.state is not JobState.SUCCEEDED:
                field = f"inputs[{index}].jobId"
                raise InvalidJobError(
                    f"{field}: job {item.job_id!r} is {source.state.value}; only succeeded jobs have outputs",
                    field=field,
                )
        check_parameter_names(params, request.inputs)
        return [name for name in dict.fromkeys(implicit) if name not in request.after]
