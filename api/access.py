"""The request side of access control: find the caller, turn decisions into responses, log every denial.

The rules live in :mod:`hastegeo.auth` (pure); this module only reads the
settings, calls them and answers. Denials are logged at WARNING with who
(name and object id), the route and the project, never the principal header,
a token or a key.
"""

from __future__ import annotations

import logging
import threading

import azure.functions as func

from api.media import unsupported_media
from api.problems import problem
from hastegeo.auth import (
    PRINCIPAL_HEADER,
    UNAUTHENTICATED_ADMIN,
    AuthMode,
    Decision,
    Principal,
    PrincipalError,
    parse_principal,
)
from hastegeo.models.job import Submitter
from hastegeo.settings.app import AuthSettings

log = logging.getLogger(__name__)

_announce_lock = threading.Lock()
_announced: AuthSettings | None = None


class Denied(Exception):
    """Raised with the response to send; the route returns ``exc.response``."""

    def __init__(self, response: func.HttpResponse) -> None:
        super().__init__(response.status_code)
        self.response = response


def not_found(kind: str, named: str) -> func.HttpResponse:
    """The one answer for a missing ``kind`` (job, group), for one the caller may not see (so existence never
    leaks) and for a name that cannot be an id at all: one shape, whatever the route was sent."""
    shown = named if len(named) <= 100 else named[:99] + "…"
    return problem(404, f"{kind.capitalize()} not found", f"No {kind} with id {shown}")


def job_not_found(job_id: str) -> func.HttpResponse:
    return not_found("job", job_id)


def submitter_of(principal: Principal) -> Submitter:
    """What a job records about the caller who submitted it: who, never how they proved it."""
    return Submitter(name=principal.name, object_id=principal.object_id or None)


def caller(req: func.HttpRequest, settings: AuthSettings, route: str) -> Principal:
    """The principal making ``req``, once it is known to carry nothing but JSON.

    Every protected route finds its caller first, so this is also where a route that changes
    state refuses a body that is not ``application/json`` (:mod:`api.media`): right after
    authentication, before anything is counted, read or written, and no route can forget it.

    Raises:
        Denied: 401 when ``HASTE_AUTH_MODE=app_service`` and the header is missing or unreadable;
            415 when an unsafe method carries a body that is not ``application/json``.
    """
    principal = _principal(req, settings, route)
    refused = unsupported_media(req.method, req.headers.get("Content-Type"), req.get_body())
    if refused:
        log.warning("unsupported media type (415) on %s %s from caller %s", req.method, route, principal.describe())
        raise Denied(
            problem(
                415, "Unsupported media type", refused[:1].upper() + refused[1:], errors=[("Content-Type", refused)]
            )
        )
    return principal


def _principal(req: func.HttpRequest, settings: AuthSettings, route: str) -> Principal:
    if settings.mode is AuthMode.NONE:
        _announce_no_auth(settings)
        return UNAUTHENTICATED_ADMIN
    try:
        return parse_principal(req.headers.get(PRINCIPAL_HEADER), settings.project_groups)
    except PrincipalError as exc:
        log.warning("access denied (401) on %s %s: %s", req.method, route, exc)
        raise Denied(
            problem(
                401,
                "Authentication required",
                "Sign in through App Service authentication; the request carried no valid caller.",
                headers={"WWW-Authenticate": 'Bearer realm="haste-compute"'},
            )
        ) from None


def require(
    decision: Decision,
    principal: Principal,
    req: func.HttpRequest,
    route: str,
    project: str,
    *,
    job_id: str = "",
) -> None:
    """Return if ``decision`` allows; else log the denial and raise :class:`Denied`.

    A concealed decision answers exactly like a missing job (404); any other denial is a 403
    naming the reason, which only ever names what the caller sent or their own roles.
    """
    if decision:
        return
    status = 404 if decision.conceal else 403
    log.warning(
        "access denied (%d) on %s %s: caller %s, project %s%s: %s",
        status,
        req.method,
        route,
        principal.describe(),
        project,
        f", job {job_id}" if job_id else "",
        decision.reason,
    )
    if decision.conceal:
        raise Denied(job_not_found(job_id))
    raise Denied(problem(403, "Forbidden", decision.reason[:1].upper() + decision.reason[1:] + "."))


def _announce_no_auth(settings: AuthSettings) -> None:
    """Say once per settings object (so once per process start) that nobody is being checked."""
    global _announced
    with _announce_lock:
        if _announced is settings:
            return
        _announced = settings
    log.warning(
        "HASTE_AUTH_MODE=none: callers are not identified and every caller is treated as Haste.Admin; "
        "use this only for isolated development"
    )
