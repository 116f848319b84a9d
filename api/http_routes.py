"""HTTP API: submit, list, read, cancel and retry jobs; list backends; health; the OpenAPI document.

Every route but health and the OpenAPI document finds its caller first (``api.access``)
and asks ``hastegeo.auth`` before it reads or writes anything: see docs/adr/0007.

Routes that touch storage use the runtime's API parts (``runtime.api``), whose storage
clients have a bounded budget, and answer 503 with ``Retry-After`` when storage does not
answer within it (``storage_guarded``). Every status code a route answers is in the
OpenAPI document (``api.openapi``), and the fuzz suite holds them to it.
"""

from __future__ import annotations

import logging

import azure.functions as func

from api import costs, logs
from api.access import Denied, caller, job_not_found, require, submitter_of
from api.bodies import idempotency_key, json_body, no_body
from api.group_routes import dependents_view, list_group_jobs
from api.openapi import openapi_document
from api.problems import json_response, problem, storage_guarded
from api.profiles import profile_views
from api.query import list_options
from api.tracing import traced
from hastegeo.auth import can_list_backends, can_read, can_submit, job_access
from hastegeo.compute.catalog import backend_names
from hastegeo.events import trace_context
from hastegeo.models.ids import ID_RULE, is_id
from hastegeo.models.job import Job
from hastegeo.pipeline.accept import Accepted, RequestRejected, parse_request
from hastegeo.pipeline.admission.board import BackendQueue
from hastegeo.pipeline.rerun import resume_option
from hastegeo.runtime import get_runtime
from hastegeo.store.cursor import InvalidTokenError
from hastegeo.store.read_urls import READ_URL_TTL, read_url
from hastegeo.utils.errors import (
    BackendUnavailableError,
    ConflictError,
    HasteError,
    InvalidJobError,
    JobNotFoundError,
    describe_exception,
)
from hastegeo.utils.ratelimit import TokenBucket

log = logging.getLogger(__name__)
bp = func.Blueprint()  # type: ignore[no-untyped-call]


@bp.route(route="jobs", methods=["POST"])
@traced("POST", "jobs")
@storage_guarded
def submit_job(req: func.HttpRequest) -> func.HttpResponse:
    """Accept a job. Its submit message is sent here, after the job is stored, with the API's bounded
    storage clients (ADR 0031): a binding the host sends after the function returned would fail as a
    500, after the SDK's patient retries, for a job that is stored and accepted."""
    runtime = get_runtime()
    try:
        principal = caller(req, runtime.settings.auth, "jobs")
    except Denied as denied:
        return denied.response
    wait = runtime.submit_limiter.take()
    if wait:
        return problem(
            429,
            "Too many submissions",
            "This instance admits a limited number of submissions per second; retry after the given delay",
            headers={"Retry-After": TokenBucket.retry_after(wait)},
        )
    try:
        body = json_body(req, runtime.settings.pipeline.max_body_bytes)
        key = idempotency_key(req)
        request = parse_request(body)
        # The caller named the project, so a refusal may say so (403), unlike a job looked up by id.
        require(can_submit(principal, request.project_id), principal, req, "jobs", request.project_id)
        # A traceparent header that is not W3C trace context costs the trace link (the job's history says so).
        notes = trace_context.check(req.headers.get("traceparent"), req.headers.get("tracestate")).notes
        accepted = runtime.api.acceptor.accept(
            request, idempotency_key=key, submitter=submitter_of(principal), notes=notes
        )
    except Denied as denied:
        return denied.response
    except RequestRejected as exc:
        return problem(400, exc.title, errors=exc.errors)
    except InvalidJobError as exc:
        return problem(400, "The job cannot run as requested", str(exc), errors=[(exc.field or "", str(exc))])
    except BackendUnavailableError as exc:
        return problem(409, "The backend cannot take this job", str(exc), errors=[("backend", str(exc))])
    except ConflictError as exc:
        return problem(409, "Conflict", str(exc))
    return _accepted(accepted)


def _accepted(accepted: Accepted) -> func.HttpResponse:
    """202 for a job just created, 200 for the one an Idempotency-Key created before; Location names it."""
    job = accepted.job
    return json_response(job.api_view(), 202 if accepted.created else 200, {"Location": f"/api/jobs/{job.id}"})


@bp.route(route="jobs", methods=["GET"])
@storage_guarded
def list_jobs(req: func.HttpRequest) -> func.HttpResponse:
    """A page of a project's jobs as summaries (the last event, not the history, unless ``include=history``).

    ``continuationToken`` is a signed position in the listing's sort order, bound to the
    project and state filter (``hastegeo.store.cursor``): any other value is a 400 naming it,
    answered before storage is read.
    """
    if req.params.get("groupId") is not None:  # a group's items, in item order (ADR 0040)
        return list_group_jobs(req, req.params["groupId"])
    runtime = get_runtime()
    project = req.params.get("projectId", "")
    try:
        principal = caller(req, runtime.settings.auth, "jobs")
        if not project:
            return problem(400, "projectId is required", errors=[("projectId", "a project id is required")])
        if not is_id(project):
            return problem(400, "Invalid projectId", errors=[("projectId", ID_RULE)])
        require(can_read(principal, project), principal, req, "jobs", project)
        options = list_options(req.params)
    except Denied as denied:
        return denied.response
    try:
        page = runtime.api.store.list(
            project,
            states=options.states,
            page_size=options.page_size,
            continuation_token=req.params.get("continuationToken") or None,
        )
    except InvalidTokenError as exc:
        return problem(400, "Invalid continuationToken", errors=[("continuationToken", exc.reason)])
    view = Job.api_view if options.history else Job.summary_view
    return json_response({"items": [view(job) for job in page.jobs], "continuationToken": page.continuation_token})


@bp.route(route="jobs/{id}", methods=["GET"])
@storage_guarded
def get_job(req: func.HttpRequest) -> func.HttpResponse:
    runtime = get_runtime()
    job_id = req.route_params.get("id", "")
    read_urls = req.params.get("readUrls", "false").lower()
    try:
        principal = caller(req, runtime.settings.auth, "jobs/{id}")
        if not is_id(job_id):
            return job_not_found(job_id)
        if read_urls not in ("true", "false"):
            return problem(400, "Invalid readUrls", errors=[("readUrls", "true or false")])
        job = runtime.api.store.get(job_id)
        require(
            job_access(principal, job.project_id, "read"), principal, req, "jobs/{id}", job.project_id, job_id=job_id
        )
    except Denied as denied:
        return denied.response
    except JobNotFoundError:
        return job_not_found(job_id)
    view = job.api_view()
    view.update(dependents_view(runtime.api.deps.groups, job.id, listed=job.has_dependents))
    if read_urls == "true":
        # Signed per blob, read-only, short-lived; made for this response and never stored.
        now = runtime.deps.clock()
        for output in view["outputs"]:
            container, _, blob = output["blob"].partition("/")
            output["url"] = read_url(runtime.api.blobs, container, blob, now)
        view["readUrlsExpireAt"] = (now + READ_URL_TTL).isoformat()
    return json_response(view)


@bp.route(route="jobs/{id}/logs", methods=["GET"])
@storage_guarded
def job_logs(req: func.HttpRequest) -> func.HttpResponse:
    """The next part of a job's stdout or stderr from a byte offset (``api.logs``)."""
    return logs.job_logs(req)


@bp.route(route="jobs/{id}/cancel", methods=["POST"])
@traced("POST", "jobs/{id}/cancel")
@storage_guarded
def cancel_job(req: func.HttpRequest) -> func.HttpResponse:
    runtime = get_runtime()
    job_id = req.route_params.get("id", "")
    route = "jobs/{id}/cancel"
    try:
        principal = caller(req, runtime.settings.auth, route)
        if not is_id(job_id):
            return job_not_found(job_id)
        no_body(req, runtime.settings.pipeline.max_body_bytes)
        # A job's project never changes, so checking the stored job first is safe.
        project = runtime.api.store.get(job_id).project_id
        require(job_access(principal, project, "cancel"), principal, req, route, project, job_id=job_id)
        job = runtime.api.cancel.cancel(job_id)
    except Denied as denied:
        return denied.response
    except JobNotFoundError:
        return job_not_found(job_id)
    except ConflictError as exc:
        return problem(409, "The job cannot be cancelled", str(exc))
    except HasteError as exc:
        log.warning("cancel of %s failed: %s", job_id, describe_exception(exc))
        return problem(503, "Cancellation could not be recorded; try again", headers={"Retry-After": "5"})
    return json_response(job.api_view(), 202)


@bp.route(route="jobs/{id}/retry", methods=["POST"])
@traced("POST", "jobs/{id}/retry")
@storage_guarded
def retry_job(req: func.HttpRequest) -> func.HttpResponse:
    """A new job with a failed or cancelled job's request, in its project (the caller must be able to submit
    there); ``Idempotency-Key`` makes a repeated call return the same retry; ``{"resumeFrom": "checkpoint"}``
    starts it from the failed job's latest checkpoint."""
    runtime = get_runtime()
    job_id = req.route_params.get("id", "")
    route = "jobs/{id}/retry"
    try:
        principal = caller(req, runtime.settings.auth, route)
        if not is_id(job_id):
            return job_not_found(job_id)
        key = idempotency_key(req)
        # checked before anything is read or stored
        resume = resume_option(json_body(req, runtime.settings.pipeline.max_body_bytes))
        job = runtime.api.store.get(job_id)
        require(job_access(principal, job.project_id, "retry"), principal, req, route, job.project_id, job_id=job_id)
        accepted = runtime.api.retry.retry(job, submitter=submitter_of(principal), idempotency_key=key, resume=resume)
    except Denied as denied:
        return denied.response
    except JobNotFoundError:
        return job_not_found(job_id)
    except InvalidJobError as exc:
        return problem(400, "The job cannot run again as requested", str(exc), errors=[(exc.field or "", str(exc))])
    except BackendUnavailableError as exc:
        return problem(409, "The backend cannot take this job", str(exc), errors=[("backend", str(exc))])
    except ConflictError as exc:
        return problem(409, "The job cannot be retried", str(exc))
    return _accepted(accepted)


@bp.route(route="backends", methods=["GET"])
def list_backends(req: func.HttpRequest) -> func.HttpResponse:
    runtime = get_runtime()
    try:
        principal = caller(req, runtime.settings.auth, "backends")
        require(can_list_backends(principal), principal, req, "backends", "-")
    except Denied as denied:
        return denied.response
    candidates = runtime.deps.router.candidates
    board = runtime.api.board.read()
    # Each enabled backend says which workloads it takes and why it takes no others, with its current settings,
    # and what its queue looked like at the reconciler's last pass.
    return json_response(
        {
            "default": runtime.settings.routing.default_backend,
            "backends": [
                {
                    "name": c.name,
                    "workloads": sorted(c.workloads),
                    "weight": c.weight,
                    "unavailable": dict(sorted(c.unable.items())),
                    "takesNothingBecause": c.takes_nothing_because,
                    "autoRoutes": c.weight > 0 and bool(c.workloads),
                    "profiles": profile_views(runtime.settings.backend(c.name)),
                    "capacity": board.get(c.name, BackendQueue()).model_dump(mode="json", by_alias=True),
                }
                for c in sorted(candidates.values(), key=lambda c: c.name)
            ],
            "disabled": [
                {"name": name, "reason": "not in HASTE_BACKENDS_ENABLED"}
                for name in backend_names()
                if name not in candidates
            ],
        }
    )


@bp.route(route="projects/{id}/costs", methods=["GET"])
@storage_guarded
def project_costs(req: func.HttpRequest) -> func.HttpResponse:
    """What a project's jobs cost (``api.costs``)."""
    return costs.project_costs(req)


@bp.route(route="projects/{id}/budget", methods=["PUT"])
@traced("PUT", "projects/{id}/budget")
@storage_guarded
def set_project_budget(req: func.HttpRequest) -> func.HttpResponse:
    """An admin sets a project's monthly budget (``api.costs``)."""
    return costs.set_budget(req)


@bp.route(route="health", methods=["GET"], auth_level=func.AuthLevel.ANONYMOUS)
def health(req: func.HttpRequest) -> func.HttpResponse:
    from hastegeo import __version__

    return json_response({"status": "ok", "version": __version__})


@bp.route(route="openapi.json", methods=["GET"], auth_level=func.AuthLevel.ANONYMOUS)
def openapi(req: func.HttpRequest) -> func.HttpResponse:
    return json_response(openapi_document())
