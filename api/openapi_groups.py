"""The job group routes of the OpenAPI document (ADR 0040), beside the job routes of :mod:`api.openapi`."""

from __future__ import annotations

from typing import Any

from hastegeo.models.group import MAX_ITEMS, GroupRequest
from hastegeo.models.ids import ID_PATTERN

_REF = "#/components/schemas/"
DEPENDENTS_SHOWN = 100  # the jobs waiting for a job or group that its view lists (one listing call)
_PROBLEM = {"application/problem+json": {"schema": {"$ref": _REF + "Problem"}}}
_GROUP_ID = {"name": "id", "in": "path", "required": True, "schema": {"type": "string", "pattern": ID_PATTERN}}
_LOCATION = {"Location": {"description": "/api/groups/{id}", "schema": {"type": "string"}}}
_UNAVAILABLE = {
    "description": "Storage did not answer in time; retry after the given delay",
    "headers": {"Retry-After": {"schema": {"type": "string"}}},
    "content": _PROBLEM,
}


def _problem(description: str) -> dict[str, Any]:
    return {"description": description, "content": _PROBLEM}


def _group(description: str, status_extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": _REF + "Group"}}},
        **(status_extra or {}),
    }


def dependents_schema(what: str) -> dict[str, Any]:
    """The ``dependents`` and ``dependentsMore`` fields of a job's or a group's view."""
    return {
        "dependents": {
            "type": "array",
            "items": {"type": "string"},
            "description": f"The first {DEPENDENTS_SHOWN} jobs waiting for this {what} (after: [id])",
        },
        "dependentsMore": {"type": "boolean", "description": "More jobs wait for it than dependents lists"},
    }


def group_schemas() -> dict[str, Any]:
    """``GroupRequest`` (from the model) and ``Group`` (the view a client reads)."""
    schema = GroupRequest.model_json_schema(by_alias=True, ref_template=_REF + "{model}", mode="validation")
    found = dict(schema.pop("$defs", {}))
    found["GroupRequest"] = schema
    count = {"type": "integer", "minimum": 0}
    found["Group"] = {
        "type": "object",
        "required": ["id", "projectId", "state", "itemCount", "made", "counts", "progress"],
        "properties": {
            "id": {"type": "string"},
            "projectId": {"type": "string"},
            "workload": {"type": "string"},
            "state": {"type": "string", "enum": ["open", "cancelling", "completed"]},
            "itemCount": {"type": "integer", "minimum": 1, "maximum": MAX_ITEMS},
            "made": {**count, "description": "Items made into jobs so far"},
            "counts": {
                "title": "GroupCounts",
                "type": "object",
                "description": "Items by state: running counts submitting, running, cancel_requested, postprocessing",
                "properties": {
                    name: count for name in ("queued", "running", "succeeded", "failed", "cancelled", "notMade")
                },
            },
            "progress": {"type": "number", "minimum": 0, "maximum": 1, "description": "Ended items / items"},
            "failures": {
                "type": "array",
                "description": "The first failed or cancelled items, with their causes (at most 20)",
                "items": {
                    "title": "GroupFailure",
                    "type": "object",
                    "properties": {
                        "index": {"type": "integer"},
                        "jobId": {"type": "string"},
                        "state": {"type": "string"},
                        "reason": {"type": ["string", "null"]},
                    },
                },
            },
            "submittedBy": {"type": ["object", "null"]},
            "correlationId": {"type": ["string", "null"]},
            "createdAt": {"type": "string", "format": "date-time"},
            "madeAt": {"type": ["string", "null"], "format": "date-time"},
            "completedAt": {"type": ["string", "null"], "format": "date-time"},
            "retried": {"type": "integer", "description": "Items made again (retry only)"},
            "links": {"title": "GroupLinks", "type": "object", "properties": {"jobs": {"type": "string"}}},
            "cost": {
                "title": "GroupCost",
                "type": ["object", "null"],
                "description": "What the group's ended items cost, every attempt counted, from the project's "
                "running totals (GET only; null where totals are not kept). The amount is final once every "
                "item ended and all were priced; items with no known price are counted apart, never as 0.",
                "properties": {
                    "amount": {"type": ["string", "null"], "description": "Decimal string; null: none priced"},
                    "currency": {"type": ["string", "null"]},
                    "endedItems": count,
                    "unpricedItems": count,
                    "final": {"type": "boolean"},
                },
            },
            **dependents_schema("group"),
        },
    }
    return found


def group_paths(principal: dict[str, Any], auth_responses: dict[str, Any]) -> dict[str, Any]:
    not_found = _problem("No such group, or a group of a project the caller does not belong to")
    return {
        "/groups": {
            "post": {
                "operationId": "submitGroup",
                "description": (
                    f"One request for up to {MAX_ITEMS} jobs: the shared part and items. Answered 202 once the "
                    "group is stored; its items become jobs shortly after (GET /groups/{id} counts them)."
                ),
                "parameters": [
                    principal,
                    {
                        "name": "Idempotency-Key",
                        "in": "header",
                        "required": False,
                        "description": "The same key returns the group it already created (the whole group).",
                        "schema": {"type": "string", "minLength": 1, "maxLength": 200},
                    },
                ],
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": {"$ref": _REF + "GroupRequest"}}},
                },
                "responses": {
                    "202": _group("The group, accepted; Location points at it", {"headers": _LOCATION}),
                    "200": _group("The group this Idempotency-Key already created", {"headers": _LOCATION}),
                    "400": _problem("The request is invalid; errors name each field (items[17].parameters.x)"),
                    **auth_responses,
                    "409": _problem("The backend cannot take the workload, or the key was used for another request"),
                    "413": _problem("The body is too large"),
                    "429": _problem("Too many submissions on this instance; see Retry-After"),
                    "503": _UNAVAILABLE,
                },
            }
        },
        "/groups/{id}": {
            "get": {
                "operationId": "getGroup",
                "parameters": [_GROUP_ID, principal],
                "responses": {
                    "200": _group("The group: counts by state, progress, first failures, timings"),
                    **auth_responses,
                    "404": not_found,
                    "503": _UNAVAILABLE,
                },
            }
        },
        "/groups/{id}/cancel": {
            "post": {
                "operationId": "cancelGroup",
                "parameters": [_GROUP_ID, principal],
                "responses": {
                    "202": _group("Cancellation recorded; queued and running items are cancelled shortly"),
                    **auth_responses,
                    "404": not_found,
                    "409": _problem("The group has completed"),
                    "503": _UNAVAILABLE,
                },
            }
        },
        "/groups/{id}/retry": {
            "post": {
                "operationId": "retryGroup",
                "parameters": [_GROUP_ID, principal],
                "responses": {
                    "202": _group("The failed and cancelled items are made again as new jobs", {"headers": _LOCATION}),
                    **auth_responses,
                    "404": not_found,
                    "409": _problem("Items are still queued or running, or none failed or was cancelled"),
                    "503": _UNAVAILABLE,
                },
            }
        },
    }
