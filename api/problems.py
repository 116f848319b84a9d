"""JSON responses and RFC 9457 problem details, so every error has the same shape."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import azure.functions as func

from hastegeo.utils.redaction import redact

PROBLEM_TYPE = "application/problem+json"


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
    if errors:
        body["errors"] = [{"field": field, "message": redact(message)} for field, message in errors]
    return func.HttpResponse(json.dumps(body), status_code=status, mimetype=PROBLEM_TYPE, headers=dict(headers or {}))
