"""Retry a failed or cancelled job: a new job with the same request, linked both ways (``retryOf``/``retries``).

The request is the stored one (:meth:`Job.request`), accepted again like any submission:
routing and inputs are checked anew, so a retry of a job whose input was deleted since is
refused with the field that is wrong. An ``Idempotency-Key`` names one retry of one job
(it is scoped to the job retried), so a client that repeats the call gets the same retry.
The new job names the old one when it is stored; the old one lists the new one right
after, and a repeated call (the same key) repairs that link should a crash have cut it.

A retry that asks for it (``{"resumeFrom": "checkpoint"}``) starts from the retried job's latest
checkpoint instead of from nothing (ADR 0044): the new job names it in ``resumeFrom``.
"""

from __future__ import annotations

from typing import Any

from hastegeo.models.job import RETRIES_LISTED, Job, Submitter
from hastegeo.models.states import JobState
from hastegeo.pipeline.accept import Accepted, JobAcceptor
from hastegeo.pipeline.deps import PipelineDeps
from hastegeo.utils.errors import ConflictError, InvalidJobError

RETRYABLE = frozenset({JobState.FAILED, JobState.CANCELLED})
SOURCE = "api"
RESUME_CHOICES = ("checkpoint",)


def resume_option(options: Any) -> bool:
    """Whether a retry's decoded body asks to resume from the retried job's checkpoint (no body, None: no).

    Raises:
        InvalidJobError: the body is not a JSON object of known options (``field`` names the bad one; ``""``
            the body as a whole, as for every other request body).
    """
    if options is None:
        return False
    if not isinstance(options, dict):
        raise InvalidJobError("the body must be a JSON object", field="")
    for name in options:
        if name != "resumeFrom":
            raise InvalidJobError(f"{name}: unknown option; the only one is resumeFrom", field=name)
    value = options.get("resumeFrom")
    if value is not None and value not in RESUME_CHOICES:
        raise InvalidJobError(
            f"resumeFrom: must be one of {', '.join(RESUME_CHOICES)} (or left out)", field="resumeFrom"
        )
    return value == "checkpoint"


def retry_key(job_id: str, idempotency_key: str) -> str:
    """The key a retry is accepted under: the client's, scoped to the job it retries."""
    return f"retry:{job_id}:{idempotency_key}"


def check_retryable(job: Job) -> None:
    """Raises ConflictError (409) unless ``job`` failed or was cancelled."""
    if job.state not in RETRYABLE:
        raise ConflictError(
            f"Job {job.id} is {job.state.value}; only failed or cancelled jobs can be retried"
            + ("" if job.state.terminal else " (cancel it first, or wait for it to end)")
        )


def link_retry(job: Job, retry_id: str) -> Job | None:
    """``job`` listing ``retry_id`` among its retries (None: it does already, or its list is full)."""
    if retry_id in job.retries or len(job.retries) >= RETRIES_LISTED:
        return None
    return job.model_copy(update={"retries": [*job.retries, retry_id]})


class Rerun:
    def __init__(self, deps: PipelineDeps, acceptor: JobAcceptor) -> None:
        self._deps = deps
        self._acceptor = acceptor

    def retry(
        self,
        job: Job,
        *,
        submitter: Submitter | None,
        idempotency_key: str | None = None,
        resume: bool = False,
    ) -> Accepted:
        """Accept a retry of ``job`` (read by the caller, who checked the caller may submit to its project);
        with ``resume``, the retry starts from ``job``'s latest checkpoint.

        Raises:
            ConflictError: the job is not failed or cancelled, or the key was used for another request.
            InvalidJobError, BackendUnavailableError: the request no longer passes its checks.
        """
        check_retryable(job)
        accepted = self._acceptor.accept(
            job.request(),
            idempotency_key=retry_key(job.id, idempotency_key) if idempotency_key else None,
            source=SOURCE,
            submitter=submitter,
            retry_of=job.id,
            resume_from=job.id if resume else None,
        )
        if accepted.job.retry_of != job.id:
            raise ConflictError("This Idempotency-Key was already used for a different request")
        self._deps.journal.update(job.id, lambda current: link_retry(current, accepted.job.id))
        return accepted
