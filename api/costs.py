"""``GET /api/projects/{id}/costs``: what a project's jobs cost, by day, backend, workload and group.

Answered from the running totals the journal keeps as jobs end (:mod:`hastegeo.pipeline.totals`):
one read per month in the range, whatever the number of jobs (docs/adr/0042). Access is a project
read, like listing its jobs (``api.access``, ``hastegeo.auth.can_read``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

import azure.functions as func

from api.access import Denied, caller, require
from api.bodies import json_body
from api.problems import json_response, problem
from hastegeo.auth import Decision, Principal, can_read
from hastegeo.models.ids import ID_RULE, is_id
from hastegeo.pipeline.totals import Day, month_of
from hastegeo.runtime import get_runtime
from hastegeo.utils.errors import ConflictError

log = logging.getLogger(__name__)

ROUTE = "projects/{id}/costs"
BUDGET_ROUTE = "projects/{id}/budget"
MAX_DAYS = 366
# What the route reads is what its document says (ASCII digits: Python's \d would take other scripts' too).
AMOUNT_BODY = r"[0-9]{1,12}(\.[0-9]{1,2})?"
DAY_BODY = r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
_AMOUNT = re.compile(AMOUNT_BODY)
_DAY = re.compile(DAY_BODY)


def project_costs(req: func.HttpRequest) -> func.HttpResponse:
    runtime = get_runtime()
    project = req.route_params.get("id", "")
    allowed = _project_caller(req, ROUTE, project, can_read)
    if isinstance(allowed, func.HttpResponse):
        return allowed
    today = runtime.deps.clock().date()
    start, end, errors = _range(req.params.get("from"), req.params.get("to"), today)
    if errors or start is None or end is None:
        return problem(400, "Invalid date range", errors=errors)
    totals = runtime.api.journal.totals
    currency, days = totals.between(project, start, end) if totals is not None else (None, {})
    view = costs_view(project, start, end, currency, days)
    budgets = runtime.api.deps.budgets
    if budgets is not None and totals is not None and (budget := budgets.budget(project)) is not None:
        month = totals.month(project, month_of(today))
        view["budget"] = {
            "month": month_of(today),
            "monthly": str(budget),
            "spent": str(month.total()),
            "committed": str(month.committed),
            "action": runtime.settings.costs.budget_action,
            "reason": budgets.reason(project, totals),
        }
    return json_response(view)


def set_budget(req: func.HttpRequest) -> func.HttpResponse:
    """``PUT /api/projects/{id}/budget`` (admins): the project's monthly budget from now on, or the settings' again."""
    runtime = get_runtime()
    project = req.route_params.get("id", "")
    principal = _project_caller(req, BUDGET_ROUTE, project, lambda principal, _project: admins_only(principal))
    if isinstance(principal, func.HttpResponse):
        return principal
    try:
        body = json_body(req, runtime.settings.pipeline.max_body_bytes)
    except Denied as denied:
        return denied.response
    amount, errors = _amount(body)
    if errors:
        return problem(400, "Invalid budget", errors=errors)
    budgets = runtime.api.deps.budgets
    if budgets is None or not budgets.active:
        return problem(409, "Budgets are off", "Set HASTE_BUDGET_ACTION to hold or refuse to keep budgets.")
    try:
        now_in_force = budgets.set(project, amount)
    except ConflictError:
        return problem(503, "The budgets kept changing; try again", headers={"Retry-After": "1"})
    log.info("budget of project %s set to %s by %s", project, amount, principal.describe())
    return json_response(
        {
            "projectId": project,
            "monthlyBudget": None if now_in_force is None else str(now_in_force),
            "action": runtime.settings.costs.budget_action,
        }
    )


def _project_caller(
    req: func.HttpRequest, route: str, project: str, decide: Callable[[Principal, str], Decision]
) -> Principal | func.HttpResponse:
    """The caller, when ``decide`` lets them at ``project``; else the answer (401, 403, or 400 naming ``id``)."""
    try:
        principal = caller(req, get_runtime().settings.auth, route)
        if not is_id(project):
            return problem(400, "Invalid project id", errors=[("id", ID_RULE)])
        require(decide(principal, project), principal, req, route, project)
    except Denied as denied:
        return denied.response
    return principal


def admins_only(principal: Principal) -> Decision:
    return Decision(principal.is_admin, "only an admin can change a project's budget")


def _amount(body: Any) -> tuple[Decimal | None, list[tuple[str, str]]]:
    """``monthlyBudget`` of the body: a decimal string of at most 2 places, or null (the settings' again).

    A string, as the document says: a JSON number is a binary float to most readers (0.1 + 0.2), and
    the money fields of every answer are strings too.
    """
    if not isinstance(body, dict):
        return None, [("", "an object with exactly one member, monthlyBudget")]
    errors = [(str(name), "unknown field") for name in body if name != "monthlyBudget"]
    if "monthlyBudget" not in body:
        errors.append(("monthlyBudget", 'required: a decimal string such as "400.00", or null'))
    value = body.get("monthlyBudget")
    if errors or value is None:
        return None, errors
    if not isinstance(value, str):
        return None, [("monthlyBudget", 'a decimal string such as "400.00", or null')]
    # The document's pattern: Decimal alone would also take "1e3", "-0", " 5", "5_000" and other scripts'
    # digits, and keep them so ("1E+3"), which no money field of an answer allows.
    if not _AMOUNT.fullmatch(value):
        return None, [("monthlyBudget", "an amount from 0 to 999999999999.99, at most 2 decimal places")]
    return Decimal(value), []


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
    try:  # fromisoformat alone would also take other ISO forms of the same length (a week date: 2026-W01-1)
        if not _DAY.fullmatch(value):
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
    **{
        f"unpricedBy{what.title()}": {
            "type": "object",
            "additionalProperties": {"type": "integer"},
            "description": f"Jobs whose cost is not known, by {what}.",
        }
        for what in ("backend", "workload", "group")
    },
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
                "budget": {"$ref": "#/components/schemas/ProjectBudgetState"},
            },
        },
        "ProjectBudgetState": {
            "type": "object",
            "description": "This month against the project's budget, when it has one (docs/adr/0042).",
            "required": ["month", "monthly", "spent", "committed", "action", "reason"],
            "properties": {
                "month": {"type": "string", "pattern": r"^\d{4}-\d{2}$"},
                "monthly": _money("The monthly budget"),
                "spent": _money("What the month's ended jobs cost"),
                "committed": _money("What its running jobs cost so far (as of the reconciler's last pass)"),
                "action": {"type": "string", "enum": ["off", "hold", "refuse"]},
                "reason": {"type": ["string", "null"], "description": "Why new jobs are held or refused, if they are"},
            },
        },
        "ProjectBudgetRequest": {
            "type": "object",
            "required": ["monthlyBudget"],
            "additionalProperties": False,
            "properties": {
                "monthlyBudget": {
                    "type": ["string", "null"],
                    "pattern": f"^{AMOUNT_BODY}$",
                    "description": "The monthly budget in the price table's currency; null: the settings' again.",
                }
            },
        },
        "ProjectBudget": {
            "type": "object",
            "required": ["projectId", "monthlyBudget", "action"],
            "properties": {
                "projectId": {"type": "string"},
                "monthlyBudget": {"type": ["string", "null"]},
                "action": {"type": "string", "enum": ["off", "hold", "refuse"]},
            },
        },
    }


def cost_paths(
    principal: dict[str, Any], auth: dict[str, Any], unavailable: dict[str, Any], problem_of: Any, json_of: Any
) -> dict[str, Any]:
    """The route in the OpenAPI document."""
    day = {"type": "string", "format": "date", "pattern": f"^{DAY_BODY}$"}
    return {
        "/projects/{id}/costs": {
            "get": {
                "operationId": "getProjectCosts",
                "description": (
                    "What the project's jobs cost, by day (the UTC day a job ended), backend, workload and group, "
                    "from running totals kept as jobs end (docs/adr/0038, docs/adr/0042). Amounts are exact "
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
        },
        "/projects/{id}/budget": {
            "put": {
                "operationId": "setProjectBudget",
                "description": (
                    "Admins: the project's monthly budget from now on (null: the one HASTE_PROJECT_BUDGETS sets "
                    "again). At the warning level a com.haste.project.budget event is sent; at 100 % new jobs are "
                    "held as queued or refused, as HASTE_BUDGET_ACTION says (docs/adr/0042)."
                ),
                "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}, principal],
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ProjectBudgetRequest"}}},
                },
                "responses": {
                    "200": json_of("The budget in force now", "ProjectBudget"),
                    "400": problem_of("Not a budget; errors name the field"),
                    **auth,
                    "409": problem_of("Budgets are off (HASTE_BUDGET_ACTION=off)"),
                    "413": problem_of("The body is larger than HASTE_MAX_BODY_BYTES"),
                    **unavailable,
                },
            }
        },
    }
