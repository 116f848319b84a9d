"""Request bodies: every route reads its body here, so every body meets one limit and one reading of JSON.

A route that takes a body reads it with :func:`json_body`: over its limit is a 413, anything
:func:`hastegeo.pipeline.accept.decode_body` refuses (not UTF-8, not JSON, too deep, a name twice, a
lone surrogate) is a 400 naming the path. A route that takes none (a cancel, a group's retry) calls
:func:`no_body`: no body or ``{}`` is fine, anything else is a 400 rather than ignored.
Both raise :class:`api.access.Denied` with the answer, which every route already returns, as does
:func:`idempotency_key`, the header that makes a repeated body create nothing new.
"""

from __future__ import annotations

from typing import Any

import azure.functions as func

from api.access import Denied
from api.problems import problem
from hastegeo.pipeline.accept import RequestRejected, decode_body


def json_body(req: func.HttpRequest, limit: int) -> Any:
    """The request's body decoded as JSON (None when it is empty).

    Raises:
        Denied: 413 when the body is over ``limit`` bytes; 400 naming the path when it is not JSON as decoded here.
    """
    raw = req.get_body()
    if len(raw) > limit:
        raise Denied(problem(413, "Request body too large", f"The limit is {limit} bytes"))
    try:
        return decode_body(raw)
    except RequestRejected as exc:
        raise Denied(problem(400, exc.title, errors=exc.errors)) from None


def no_body(req: func.HttpRequest, limit: int) -> None:
    """Return when the request carries no body, or an empty JSON object; this route reads nothing else.

    Raises:
        Denied: as :func:`json_body`, or 400 naming each member of an object and the body as a whole otherwise.
    """
    body = json_body(req, limit)
    if body == {} or (body is None and not req.get_body()):
        return
    errors = [(str(name), "unknown field; this route takes no body") for name in body] if isinstance(body, dict) else []
    raise Denied(problem(400, "This route takes no body", errors=errors or [("", "send no body, or an empty object")]))


def idempotency_key(req: func.HttpRequest) -> str | None:
    """The request's ``Idempotency-Key`` (None when it sends none).

    Raises:
        Denied: 400 naming the header when it is not 1-200 characters.
    """
    key: str | None = req.headers.get("Idempotency-Key")
    if key is not None and not (1 <= len(key) <= 200):
        raise Denied(problem(400, "Invalid Idempotency-Key", errors=[("Idempotency-Key", "must be 1-200 characters")]))
    return key
