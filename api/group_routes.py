"""HTTP API for job groups (ADR 0040): submit, read, list items, cancel, retry.

Access control is a job's (docs/adr/0007): submitting names the project, so a refusal may
say so (403); a group looked up by id that the caller may not read answers exactly like a
missing group (404), so its existence never leaks.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import azure.functions as func

from api.access import Denied, caller, not_found, require, submitter_of
from api.bodies import idempotency_key, json_body, no_body
from api.media import SAFE_METHODS
from api.openapi_groups import DEPENDENTS_SHOWN
from api.problems import json_response, problem, storage_guarded
from api.query import list_options, whole_number
from api.tracing import traced
from hastegeo.auth import Decision, Principal, can_submit, job_access
from hastegeo.models.group import Group
from hastegeo.models.ids import ID_RULE, is_id
from hastegeo.models.job import Job
from hastegeo.pipeline.accept import RequestRejected
from hastegeo.pipeline.groups import parse_group
from hastegeo.runtime import Pipeline, get_runtime
from hastegeo.store.groups import GroupNotFoundError, GroupStore
from hastegeo.utils.errors import BackendUnavailableError, ConflictError
from hastegeo.utils.ratelimit import TokenBucket

log = logging.getLogger(__name__)
bp = func.Blueprint()  # type: ignore[no-untyped-call]
# A group request may carry 10,000 items: its body limit is its own (the job body limit is far smaller).
MAX_GROUP_BODY_BYTES = 16 * 1024 * 1024
_readers = ThreadPoolExecutor(max_workers=8, thread_name_prefix="group-list")


def group_not_found(group_id: str) -> func.HttpResponse:
    return not_found("group", group_id)


def dependents_view(groups: GroupStore | None, upstream: str, *, listed: bool = True) -> dict[str, Any]:
    """``dependents`` (the first jobs waiting for ``upstream``) and ``dependentsMore`` (some are not listed).

    ``listed`` False (a job never flagged as waited for) answers without a storage call.
    """
    if groups is None or not listed:
        return {"dependents": [], "dependentsMore": False}
    names, more = groups.first_dependents(upstream, DEPENDENTS_SHOWN)
    return {"dependents": names, "dependentsMore": more}


@bp.route(route="groups", methods=["POST"])
@traced("POST", "groups")
@storage_guarded
def submit_group(req: func.HttpRequest) -> func.HttpResponse:
    """Accept a group: validated whole, stored, and answered 202 before its items are made."""
    runtime = get_runtime()
    try:
        principal = caller(req, runtime.settings.auth, "groups")
    except Denied as denied:
        return denied.response
    wait = runtime.submit_limiter.take()
    if wait:
        return problem(429, "Too many submissions", headers={"Retry-After": TokenBucket.retry_after(wait)})
    try:
        body = json_body(req, MAX_GROUP_BODY_BYTES)
        key = idempotency_key(req)
        request = parse_group(body)
        require(can_submit(principal, request.project_id), principal, req, "groups", request.project_id)
        group, created = runtime.api.groups.accept(request, idempotency_key=key, submitter=submitter_of(principal))
    except Denied as denied:
        return denied.response
    except RequestRejected as exc:
        return problem(400, exc.title, errors=exc.errors)
    except BackendUnavailableError as exc:
        return problem(409, "The backend cannot take this group", str(exc), errors=[("backend", str(exc))])
    except ConflictError as exc:
        return problem(409, "Conflict", str(exc))
    return json_response(group.view(), 202 if created else 200, {"Location": f"/api/groups/{group.id}"})


def _group(
    req: func.HttpRequest, route: str, action: str, group_id: str | None = None
) -> tuple[Pipeline, Principal, Group]:
    """The group ``group_id`` (by default the one the route names), once the caller may ``action`` it.

    Raises Denied: 404 for a missing group or one the caller may not read, 403 for one they may read only.
    """
    runtime = get_runtime()
    group_id = req.route_params.get("id", "") if group_id is None else group_id
    principal = caller(req, runtime.settings.auth, route)
    if not is_id(group_id):
        raise Denied(group_not_found(group_id))
    if req.method.upper() not in SAFE_METHODS:  # a group's cancel and retry take no body
        no_body(req, runtime.settings.pipeline.max_body_bytes)
    try:
        group = runtime.api.deps.groups.get(group_id)  # type: ignore[union-attr]
    except GroupNotFoundError:
        raise Denied(group_not_found(group_id)) from None
    decision: Decision = job_access(principal, group.project_id, action)  # type: ignore[arg-type]
    if not decision and decision.conceal:
        log.warning(
            "access denied (404) on %s %s: caller %s, group %s", req.method, route, principal.describe(), group_id
        )
        raise Denied(group_not_found(group_id))
    require(decision, principal, req, route, group.project_id)
    return runtime.api, principal, group


@bp.route(route="groups/{id}", methods=["GET"])
@storage_guarded
def get_group(req: func.HttpRequest) -> func.HttpResponse:
    try:
        api, _, group = _group(req, "groups/{id}", "read")
    except Denied as denied:
        return denied.response
    return json_response({**group.view(), **dependents_view(api.deps.groups, group.id), "cost": _cost(api, group)})


def _cost(api: Pipeline, group: Group) -> dict[str, Any] | None:
    """The group's items' cost so far, from its project's running totals (one read per month it spans)."""
    totals = api.journal.totals
    if totals is None:
        return None
    end = (group.completed_at or api.deps.clock()).date()
    cost = totals.of_group(group.project_id, group.id, group.created_at.date(), max(end, group.created_at.date()))
    return cost.view(ended=group.ended, complete=group.completed_at is not None)


@bp.route(route="groups/{id}/cancel", methods=["POST"])
@traced("POST", "groups/{id}/cancel")
@storage_guarded
def cancel_group(req: func.HttpRequest) -> func.HttpResponse:
    try:
        api, _, group = _group(req, "groups/{id}/cancel", "cancel")
    except Denied as denied:
        return denied.response
    if group.completed_at is not None:
        return problem(409, "The group cannot be cancelled", f"Group {group.id} has ended; there is nothing to cancel")
    return json_response(api.groups.cancel(group.id).view(), 202)


@bp.route(route="groups/{id}/retry", methods=["POST"])
@traced("POST", "groups/{id}/retry")
@storage_guarded
def retry_group(req: func.HttpRequest) -> func.HttpResponse:
    try:
        api, _, group = _group(req, "groups/{id}/retry", "retry")
        retried, count = api.groups.retry(group.id)
    except Denied as denied:
        return denied.response
    except ConflictError as exc:
        return problem(409, "The group cannot be retried", str(exc))
    return json_response({**retried.view(), "retried": count}, 202, {"Location": f"/api/groups/{group.id}"})


def list_group_jobs(req: func.HttpRequest, group_id: str) -> func.HttpResponse:
    """``GET /api/jobs?groupId=…``: a page of the group's item jobs, in item order.

    ``continuationToken`` is the index of the next item (a group's order never changes).
    """
    try:
        api, _, group = _group(req, "jobs", "read", group_id)
        project = req.params.get("projectId")
        if project is not None and not is_id(project):
            return problem(400, "Invalid projectId", errors=[("projectId", ID_RULE)])
        options = list_options(req.params)  # state is checked like a project listing's, and not applied
    except Denied as denied:
        return denied.response
    start = whole_number(req.params.get("continuationToken") or "0", max(group.item_count - 1, 0))
    if start is None:
        return problem(400, "Invalid continuationToken", errors=[("continuationToken", "not issued for this group")])
    end = min(start + options.page_size, group.item_count)
    ids = [group.job_id(i) for i in range(start, end)]
    found = list(_readers.map(api.store.find, ids))
    view = Job.api_view if options.history else Job.summary_view
    items = [view(job) for job in found if job is not None]
    return json_response({"items": items, "continuationToken": str(end) if end < group.item_count else None})
