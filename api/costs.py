"""``GET /api/projects/{id}/costs``: what a project's jobs cost, by day, backend, workload and group.

Answered from the running totals the journal keeps as jobs end (:mod:`hastegeo.pipeline.totals`):
one read per month in the range, whatever the number of jobs (docs/adr/0040). Access is a project
read, like listing its jobs (``api.access``, ``hastegeo.auth.can_read``).
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

import azure.functions as func

from api.access import Denied, caller, require
from api.problems import json_response, problem
from hastegeo.auth import can_read
from hastegeo.models.ids import ID_RULE, is_id
from hastegeo.pipeline.totals import Day
from hastegeo.runtime import get_runtime

ROUTE = "projects/{id}/costs"
MAX_DAYS = 366


def project_costs(req: func.HttpRequest) -> func.HttpResponse:
    runtime = get_runtime()
    project = req.route_params.get("id", "")
    try:
        principal = caller(req, runtime.settings.auth, ROUTE)
        if not is_id(project):
            return problem(400, "Invalid project id", errors=[("id", ID_RULE)])
        require(can_read(principal, project), principal, req, ROUTE, project)
    except Denied as denied:
        return denied.response
    today = runtime.deps.clock().date()
    start, end, errors = _range(req.params.get("from"), req.params.get("to"), today)
    if errors or start is None or end is None:
        return problem(400, "Invalid date range", errors=errors)
    totals = runtime.api.journal.totals
    currency, days = totals.between(project, start, end) if totals is not None else (None, {})
    return json_response(costs_view(project, start, end, currency, days))


def costs_view(project: str, start: date, end: date, currency: str | None, days: dict[str, Day]) -> dict[str, Any]:
    whole = Day()
    for day in days.values():
        whole.merge(day)
    summary = whole.view()
    return {
        "projectId": project,
        "from": start.isoformat(),
        "to": end.isoformat(),
        "currency": currency,
        "total": summary.pop("amount"),
        **summary,
        "days": [{"day": name, **day.view()} for name, day in days.items()],
    }


def _range(
    given_from: str | None, given_to: str | None, today: date
) -> tuple[date | None, date | None, list[tuple[str, str]]]:
    """``from`` and ``to`` (default: this month so far), or the errors naming them."""
    errors: list[tuple[str, str]] = []
    start = _date(given_from, today.replace(day=1), "from", errors)
    end = _date(given_to, today, "to", errors)
    if start and end:
        if start > end:
            errors.append(("from", "must not be after 'to'"))
        elif (end - start) >= timedelta(days=MAX_DAYS):
            errors.append(("to", f"at most {MAX_DAYS} days after 'from'"))
    return start, end, errors


def _date(value: str | None, default: date, name: str, errors: list[tuple[str, str]]) -> date | None:
    if not value:
        return default
    try:
        if len(value) != 10:
            raise ValueError(value)
        return date.fromisoformat(value)
    except ValueError:
        errors.append((name, "a date as YYYY-MM-DD"))
        return None


def _money(description: str) -> dict[str, Any]:
    return {"type": "string", "pattern": r"^-?\d+(\.\d+)?$", "description": description}


def _by(what: str) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": _money(f"Amount by {what}"), "description": f"Amount by {what}."}


_COUNTS = {
    "jobs": {"type": "integer", "description": "Jobs that ended in the period."},
    "unpriced": {"type": "integer", "description": "Of those, jobs whose cost is not known (not in the amounts)."},
    "byBackend": _by("backend"),
    "byWorkload": _by("workload"),
    "byGroup": _by("group"),
}


def cost_schemas() -> dict[str, Any]:
    """The OpenAPI schemas of the route's answer."""
    return {
        "CostDay": {
            "type": "object",
            "required": ["day", "amount", "jobs", "unpriced"],
            "properties": {"day": {"type": "string", "format": "date"}, "amount": _money("Amount that day"), **_COUNTS},
        },
        "ProjectCosts": {
            "type": "object",
            "required": ["projectId", "from", "to", "currency", "total", "jobs", "unpriced", "days"],
            "properties": {
                "projectId": {"type": "string"},
                "from": {"type": "string", "format": "date"},
                "to": {"type": "string", "format": "date"},
                "currency": {"type": ["string", "null"], "description": "null: no job in the period had a price"},
                "total": _money("Sum of the amounts in the period (exact; round for display)"),
                **_COUNTS,
                "days": {"type": "array", "items": {"$ref": "#/components/schemas/CostDay"}},
            },
        },
    }


def cost_paths(
    principal: dict[str, Any], auth: dict[str, Any], unavailable: dict[str, Any], problem_of: Any, json_of: Any
) -> dict[str, Any]:
    """The route in the OpenAPI document."""
    day = {"type": "string", "format": "date", "pattern": r"^\d{4}-\d{2}-\d{2}$"}
    return {
        "/projects/{id}/costs": {
            "get": {
                "operationId": "getProjectCosts",
                "description": (
                    "What the project's jobs cost, by day (the UTC day a job ended), backend, workload and group, "
                    "from running totals kept as jobs end (docs/adr/0038, docs/adr/0040). Amounts are exact "
                    "decimal strings; a job whose price is not known is counted in `unpriced`, never as 0."
                ),
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}},
                    {
                        "name": "from",
                        "in": "query",
                        "required": False,
                        "schema": day,
                        "description": "First day (default: the first of this month).",
                    },
                    {
                        "name": "to",
                        "in": "query",
                        "required": False,
                        "schema": day,
                        "description": f"Last day, at most {MAX_DAYS - 1} days after from (default: today).",
                    },
                    principal,
                ],
                "responses": {
                    "200": json_of("The project's costs in the period", "ProjectCosts"),
                    "400": problem_of("A bad project id or date; errors name the field"),
                    **auth,
                    **unavailable,
                },
            }
        }
    }
