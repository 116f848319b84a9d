"""JSON responses and RFC 9457 problem details, so every error has the same shape."""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any, ParamSpec

import azure.functions as func
from azure.core.exceptions import HttpResponseError, ServiceRequestError, ServiceResponseError

from hastegeo.utils.errors import describe_exception
from hastegeo.utils.redaction import redact

log = logging.getLogger(__name__)

PROBLEM_TYPE = "application/problem+json"
# What a client waits before retrying a request that storage could not serve.
STORAGE_RETRY_AFTER_S = 5
_P = ParamSpec("_P")


def json_response(body: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> func.HttpResponse:
    return func.HttpResponse(
        json.dumps(body, default=str), status_code=status, mimetype="application/json", headers=dict(headers or {})
    )


def problem(
    status: int,
    title: str,
    detail: str | None = None,
    *,
    errors: list[tuple[str, str]] | None = None,
    headers: Mapping[str, str] | None = None,
) -> func.HttpResponse:
    body: dict[str, Any] = {"type": "about:blank", "title": title, "status": status}
    if detail:
        body["detail"] = redact(detail)
    if errors:  # a message that starts with its field (an exception's own text) does not say it twice
        body["errors"] = [
            {"field": field, "message": redact(message.removeprefix(f"{field}: ") if field else message)}
            for field, message in errors
        ]
    return func.HttpResponse(json.dumps(body), status_code=status, mimetype=PROBLEM_TYPE, headers=dict(headers or {}))


def storage_unavailable() -> func.HttpResponse:
    """The answer when job storage did not answer within the request's budget: retry later."""
    return problem(
        503,
        "Storage is unavailable",
        "Job storage did not answer in time; nothing was changed by this request unless it says so. Retry later.",
        headers={"Retry-After": str(STORAGE_RETRY_AFTER_S)},
    )


def _unavailable(exc: Exception) -> bool:
    """Storage could not serve the call: not reached, no answer in time, or a server-side (5xx/408/429) error."""
    if isinstance(exc, ServiceRequestError | ServiceResponseError | TimeoutError):
        return True
    status = exc.status_code if isinstance(exc, HttpResponseError) else None
    return isinstance(exc, HttpResponseError) and (status is None or status >= 500 or status in (408, 429))


def storage_guarded(handler: Callable[_P, func.HttpResponse]) -> Callable[_P, func.HttpResponse]:
    """Answer 503 problem+json with ``Retry-After`` when storage is unavailable, instead of a 500.

    HTTP handlers use storage clients with a bounded budget (``hastegeo.runtime.StorageBudget``),
    so the error arrives within seconds; this turns it into an honest answer in one place.
    """

    @functools.wraps(handler)
    def guarded(*args: _P.args, **kwargs: _P.kwargs) -> func.HttpResponse:
        try:
            return handler(*args, **kwargs)
        except (HttpResponseError, ServiceRequestError, ServiceResponseError, TimeoutError) as exc:
            if not _unavailable(exc):
                raise
            log.warning("%s: storage unavailable, answered 503: %s", handler.__name__, describe_exception(exc))
            return storage_unavailable()

    return guarded
