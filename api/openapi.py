"""The OpenAPI 3.1 document of the HTTP API, built from the same pydantic models the API validates with.

Responses describe what the API really sends: the job schemas list the fields of
``Job.api_view`` / ``Job.summary_view`` only (no internal bookkeeping) and forbid others, every
status code a route can answer is listed with its headers (``Location`` on 202, ``Retry-After``
on 429 and 503), and the fuzz suite (``tests/fuzz``) checks every answer against this document.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from api.console_policy import openapi_paths as console_paths
from api.costs import cost_paths, cost_schemas
from api.openapi_groups import dependents_schema, group_paths, group_schemas
from api.openapi_logs import log_paths, log_schemas
from api.openapi_names import name_every_object
from api.profiles import profiles_schema
from hastegeo import __version__
from hastegeo.compute.catalog import backend_names
from hastegeo.models.ids import ID_BODY, ID_PATTERN
from hastegeo.models.job import INTERNAL_FIELDS, Job, JobRequest
from hastegeo.models.states import JobState
from hastegeo.store.cursor import TOKEN_MAX_CHARS
from hastegeo.workloads.processor import processors

_REF = "#/components/schemas/"


def _problem(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/problem+json": {"schema": {"$ref": _REF + "Problem"}}}}


def _json(description: str, schema: str, headers: dict[str, Any] | None = None) -> dict[str, Any]:
    response: dict[str, Any] = {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": _REF + schema}}},
    }
    if headers:
        response["headers"] = headers
    return response


_LOCATION = {
    "Location": {
        "description": "The job's URL, /api/jobs/{id}",
        "required": True,
        "schema": {"type": "string", "pattern": f"^/api/jobs/{ID_BODY}$"},
    }
}
_RETRY_AFTER = {
    "Retry-After": {
        "description": "Seconds to wait before retrying",
        "required": True,
        "schema": {"type": "string", "pattern": "^[0-9]+$"},
    }
}


def _retry_later(description: str) -> dict[str, Any]:
    return {**_problem(description), "headers": _RETRY_AFTER}


def _links(**links: tuple[str, dict[str, str]]) -> dict[str, Any]:
    """OpenAPI links: which operation a response leads to, and where its parameters come from."""
    return {"links": {name: {"operationId": op, "parameters": params} for name, (op, params) in links.items()}}


# What a client does next with a job it got back (clients and the stateful fuzz follow these).
_JOB_LINKS = _links(
    GetJob=("getJob", {"id": "$response.body#/id"}),
    CancelJob=("cancelJob", {"id": "$response.body#/id"}),
)

# Every route that reads or writes job storage can answer this.
_UNAVAILABLE = {"503": _retry_later("Job storage did not answer in time; retry after Retry-After seconds")}


def _job_views(schemas: dict[str, Any]) -> None:
    """Make ``Job`` the response a client gets (no internal fields, nothing else) and add ``JobSummary``."""
    job = schemas["Job"]
    internal = {Job.model_fields[name].alias or name for name in INTERNAL_FIELDS}
    job["properties"] = {name: value for name, value in job["properties"].items() if name not in internal}
    job["required"] = [name for name in job.get("required", []) if name not in internal]
    job["properties"]["readUrlsExpireAt"] = {
        "type": "string",
        "format": "date-time",
        "description": "Only with readUrls=true: when the outputs' read URLs expire",
    }
    job["additionalProperties"] = False
    schemas["OutputRecord"]["properties"]["url"] = {
        "type": "string",
        "description": "Only with readUrls=true: a read-only URL for this output, valid 15 minutes",
    }
    summary = {
        **job,
        "title": "JobSummary",
        "description": "A job in a list: as Job, with its latest event instead of the history.",
        "properties": {k: v for k, v in job["properties"].items() if k not in ("history", "historyFolded")},
    }
    summary["properties"]["lastEvent"] = {"anyOf": [{"$ref": _REF + "StatusEvent"}, {"type": "null"}]}
    summary["properties"].pop("readUrlsExpireAt")
    schemas["JobSummary"] = summary
    # A view is a whole dump (null included): every field is always there, which is what generated types
    # should say (only readUrlsExpireAt and an output's url depend on readUrls=true).
    job["required"] = [name for name in job["properties"] if name != "readUrlsExpireAt"]
    job["properties"].update(dependents_schema("job"))  # GET /jobs/{id} only: not required
    summary["required"] = list(summary["properties"])
    for name in _ANSWER_ONLY:
        schemas[name]["required"] = [field for field in schemas[name]["properties"] if field != "url"]


# Models only ever sent by the API, whole (JobInput is also part of a request, where its fields are optional).
_ANSWER_ONLY = ("StatusEvent", "OutputRecord", "Submitter", "Attempts", "ComputeJobHandle", "BlobLocation")


_PRINCIPAL = {
    "name": "X-MS-CLIENT-PRINCIPAL",
    "in": "header",
    "required": False,
    "description": (
        "Set by App Service authentication from the caller's Entra ID token (base64 JSON: auth_typ, claims, "
        "name_typ, role_typ); the platform removes any copy a client sends. Clients send a bearer token instead. "
        "The development host injects the identity HASTE_DEV_PRINCIPAL describes. Missing or unreadable: 401."
    ),
    "schema": {"type": "string", "maxLength": 32768},
}

# Every protected operation can answer these two.
_AUTH_RESPONSES = {
    "401": {
        "description": "No valid caller (App Service authentication is required)",
        "headers": {"WWW-Authenticate": {"schema": {"type": "string"}}},
        "content": {"application/problem+json": {"schema": {"$ref": _REF + "Problem"}}},
    },
    "403": {
        "description": "The caller's role or project membership does not allow this; the detail says which",
        "content": {"application/problem+json": {"schema": {"$ref": _REF + "Problem"}}},
    },
}

_JOB_ID = {
    "name": "id",
    "in": "path",
    "required": True,
    "schema": {"type": "string", "pattern": ID_PATTERN},
}


def _parameter_schemas(schemas: dict[str, Any]) -> None:
    """Each workload's ``parameters`` schema (bounds, descriptions, an example), tied to ``workload`` in JobRequest.

    Built from the model the processor validates with, which is also the
    model the workload reads on compute; ``if``/``then`` (JSON Schema
    2020-12, which OpenAPI 3.1 uses) applies the one matching ``workload``.
    """
    rules = []
    for workload, processor in processors().items():
        name = f"{workload.capitalize()}Parameters"
        schema = processor.params_model.model_json_schema(by_alias=True, ref_template=_REF + "{model}")
        schemas.update(schema.pop("$defs", {}))
        schemas[name] = {**schema, "title": name}
        rules.append(
            {
                "if": {"properties": {"workload": {"const": workload}}, "required": ["workload"]},
                "then": {"properties": {"parameters": {"$ref": _REF + name}}},
            }
        )
    schemas["JobRequest"]["allOf"] = rules


def _backend_enums(schemas: dict[str, Any]) -> None:
    """The backend fields accept what the descriptors name (built in or installed): list them as the enum."""
    names = ["auto", *backend_names()]
    for model, field in (("JobRequest", "backend"), ("Job", "requestedBackend")):
        schema = schemas[model]["properties"][field]
        target = next((option for option in schema.get("anyOf", []) if option.get("type") == "string"), schema)
        target["enum"] = names


_UNSAFE = ("post", "put", "patch", "delete")


def _json_only(paths: dict[str, Any]) -> None:
    """Every operation that changes state answers 415 to a body that is not application/json (api.media), and
    reads its body in one place (api.bodies): 413 over the limit, 400 for a body that is not JSON or not what it
    takes. One that names no requestBody takes none, or an empty object."""
    for path_item in paths.values():
        for method in _UNSAFE:
            if method in path_item:
                responses = path_item[method]["responses"]
                responses["415"] = _problem(
                    "The body is not application/json (a body without Content-Type included); nothing was done"
                )
                responses.setdefault("413", _problem("The body is larger than the limit; nothing was done"))
                responses.setdefault("400", _problem("The body is not JSON or not what this takes; errors name it"))


@lru_cache(maxsize=1)
def openapi_document() -> dict[str, Any]:
    schemas: dict[str, Any] = {}
    for name, model in (("JobRequest", JobRequest), ("Job", Job)):
        schema = model.model_json_schema(by_alias=True, ref_template=_REF + "{model}", mode="validation")
        schemas.update(schema.pop("$defs", {}))
        schemas[name] = schema
    _job_views(schemas)
    schemas.update(group_schemas())
    _parameter_schemas(schemas)
    _backend_enums(schemas)
    schemas["Problem"] = {
        "type": "object",
        "required": ["title", "status"],
        "properties": {
            "type": {"type": "string"},
            "title": {"type": "string"},
            "status": {"type": "integer"},
            "detail": {"type": "string"},
            "errors": {
                "type": "array",
                "items": {
                    "title": "FieldError",
                    "type": "object",
                    "properties": {"field": {"type": "string"}, "message": {"type": "string"}},
                },
            },
        },
    }
    schemas.update(cost_schemas())
    schemas.update(log_schemas())
    schemas["JobPage"] = {
        "type": "object",
        "required": ["items", "continuationToken"],
        "additionalProperties": False,
        "properties": {
            "items": {
                "type": "array",
                "description": "JobSummary items; whole Job items with include=history",
                "items": {"anyOf": [{"$ref": _REF + "JobSummary"}, {"$ref": _REF + "Job"}]},
            },
            "continuationToken": {
                "type": ["string", "null"],
                "maxLength": TOKEN_MAX_CHARS,
                "description": "Pass it back to get the next page; null when there is none",
            },
        },
    }
    schemas["Backends"] = {
        "type": "object",
        "description": "The enabled backends with the workloads each takes with its current settings, the reason "
        "for each workload it does not take, and the backends that are not enabled.",
        "properties": {
            "default": {"type": "string"},
            "backends": {
                "type": "array",
                "items": {
                    "title": "Backend",
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "workloads": {"type": "array", "items": {"type": "string"}},
                        "weight": {"type": "number"},
                        "unavailable": {
                            "title": "UnavailableWorkloads",
                            "type": "object",
                            "description": "Why each workload the backend does not take is refused, by workload",
                            "additionalProperties": {"type": "string"},
                        },
                        "takesNothingBecause": {"type": ["string", "null"]},
                        "autoRoutes": {
                            "type": "boolean",
                            "description": "Whether auto sends jobs here (first choice or after a move)",
                        },
                        "profiles": profiles_schema(),
                        "capacity": {
                            "type": "object",
                            "description": "The backend's queue at the reconciler's last pass",
                            "properties": {
                                "waiting": {"type": "integer", "description": "Jobs waiting for compute"},
                                "oldestWaitS": {"type": ["number", "null"], "description": "The oldest wait (s)"},
                                "lastReason": {"type": ["string", "null"], "description": "The last capacity reason"},
                                "lastReasonAt": {"type": ["string", "null"], "format": "date-time"},
                            },
                        },
                    },
                },
            },
            "disabled": {
                "type": "array",
                "items": {
                    "title": "DisabledBackend",
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "reason": {"type": "string"}},
                },
            },
        },
    }
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "haste-compute",
            "version": __version__,
            "description": (
                "Every route except /health and /openapi.json needs a caller identified by App Service "
                "authentication (an Entra token); a function key as well only where HASTE_HTTP_AUTH_LEVEL=function. "
                "Roles: Haste.Reader lists and reads, Haste.Submitter also submits, "
                "cancels and retries, Haste.Admin does everything in every project. Others' jobs are reachable only "
                "in the caller's projects; a job of another project answers 404, exactly like a missing job."
            ),
        },
        "servers": [{"url": "/api"}],
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "functionKey": {"type": "apiKey", "in": "header", "name": "x-functions-key"},
                "entraId": {
                    "type": "http",
                    "scheme": "bearer",
                    "bearerFormat": "JWT",
                    "description": "An Entra ID token for the app's registration; App Service authentication "
                    "validates it and passes the caller to the API as X-MS-CLIENT-PRINCIPAL.",
                },
            },
        },
        # Either the token alone (HASTE_HTTP_AUTH_LEVEL=anonymous, the default) or token and key (function).
        "security": [{"entraId": []}, {"functionKey": [], "entraId": []}],
        "paths": {
            "/jobs": {
                "post": {
                    "operationId": "submitJob",
                    "parameters": [
                        _PRINCIPAL,
                        {
                            "name": "Idempotency-Key",
                            "in": "header",
                            "required": False,
                            "schema": {"type": "string", "minLength": 1, "maxLength": 200},
                        },
                    ],
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": {"$ref": _REF + "JobRequest"}}},
                    },
                    "responses": {
                        "202": {**_json("Accepted; Location points at the job", "Job", _LOCATION), **_JOB_LINKS},
                        "200": {
                            **_json("The job this Idempotency-Key already created", "Job", _LOCATION),
                            **_JOB_LINKS,
                        },
                        "400": _problem("Invalid request; errors name the fields"),
                        **_AUTH_RESPONSES,
                        "409": _problem("Backend unavailable, or Idempotency-Key reused"),
                        "413": _problem("Body too large"),
                        "429": _retry_later("Too many submissions on this instance; see Retry-After"),
                        **_UNAVAILABLE,
                    },
                },
                "get": {
                    "operationId": "listJobs",
                    "description": (
                        "Newest first. With a state filter a page may hold fewer items than pageSize while a "
                        "continuationToken remains (each page examines a bounded number of jobs); follow the "
                        "token until it is null."
                    ),
                    "parameters": [
                        _PRINCIPAL,
                        {
                            "name": "projectId",
                            "in": "query",
                            "required": False,
                            "description": "The project to list; required unless groupId is given.",
                            "schema": {"type": "string", "pattern": ID_PATTERN},
                        },
                        {
                            "name": "groupId",
                            "in": "query",
                            "required": False,
                            "description": (
                                "List this group's items in item order (projectId and state are checked, not applied)."
                            ),
                            "schema": {"type": "string", "pattern": ID_PATTERN},
                        },
                        {
                            "name": "state",
                            "in": "query",
                            "required": False,
                            "description": "One state or several, comma-separated (running,queued).",
                            "style": "form",
                            "explode": False,
                            "schema": {
                                "type": "array",
                                "minItems": 1,
                                "items": {"type": "string", "enum": [s.value for s in JobState]},
                            },
                        },
                        {
                            "name": "pageSize",
                            "in": "query",
                            "required": False,
                            "schema": {"type": "integer", "minimum": 1, "maximum": 200},
                        },
                        {
                            "name": "continuationToken",
                            "in": "query",
                            "required": False,
                            "description": (
                                "The token the previous page returned, unchanged. It is opaque, signed and bound to "
                                "projectId and state; any other value is a 400 naming continuationToken."
                            ),
                            "schema": {"type": "string", "maxLength": TOKEN_MAX_CHARS},
                        },
                        {
                            "name": "include",
                            "in": "query",
                            "required": False,
                            "description": "history: list whole jobs (as GET /jobs/{id}) instead of summaries",
                            "schema": {"type": "string", "enum": ["history"]},
                        },
                    ],
                    "responses": {
                        "200": {
                            **_json("A page of job summaries, newest first", "JobPage"),
                            **_links(
                                NextPage=(
                                    "listJobs",
                                    {
                                        "projectId": "$request.query.projectId",
                                        "state": "$request.query.state",
                                        "pageSize": "$request.query.pageSize",
                                        "include": "$request.query.include",
                                        "continuationToken": "$response.body#/continuationToken",
                                    },
                                )
                            ),
                        },
                        "400": _problem("Bad query; errors name the parameter"),
                        **_AUTH_RESPONSES,
                        "404": _problem("groupId: no such group, or one of a project the caller does not belong to"),
                        **_UNAVAILABLE,
                    },
                },
            },
            "/jobs/{id}": {
                "get": {
                    "operationId": "getJob",
                    "parameters": [
                        _JOB_ID,
                        _PRINCIPAL,
                        {
                            "name": "readUrls",
                            "in": "query",
                            "required": False,
                            "description": "true: add a read-only URL valid for 15 minutes to each output",
                            "schema": {"type": "string", "enum": ["true", "false"]},
                        },
                    ],
                    "responses": {
                        "200": _json("The job", "Job"),
                        "400": _problem("Bad query; errors name the parameter"),
                        "401": _AUTH_RESPONSES["401"],
                        "404": _problem("No such job, or a job of a project the caller does not belong to"),
                        **_UNAVAILABLE,
                    },
                }
            },
            "/jobs/{id}/cancel": {
                "post": {
                    "operationId": "cancelJob",
                    "parameters": [_JOB_ID, _PRINCIPAL],
                    "responses": {
                        "202": {
                            **_json(
                                "Cancellation recorded: a queued job is cancelled at once, a running one is "
                                "cancel_requested until its provider stops. Repeating it while cancel_requested "
                                "answers 202 again and changes nothing.",
                                "Job",
                            ),
                            **_links(
                                CancelAgain=("cancelJob", {"id": "$request.path.id"}),
                                GetJob=("getJob", {"id": "$request.path.id"}),
                            ),
                        },
                        **_AUTH_RESPONSES,
                        "404": _problem("No such job, or a job of a project the caller does not belong to"),
                        "409": _problem("The job already ended (succeeded, failed, cancelled) or is post-processing"),
                        "503": _retry_later("Storage did not answer, or the cancellation could not be recorded"),
                    },
                }
            },
            "/jobs/{id}/retry": {
                "post": {
                    "operationId": "retryJob",
                    "description": (
                        "A new job with the same request in the same project, for a failed or cancelled job. Its "
                        "retryOf names this job, whose retries list it. The request is checked again like a "
                        "submission; the caller must be able to submit to the project."
                    ),
                    "parameters": [
                        _JOB_ID,
                        _PRINCIPAL,
                        {
                            "name": "Idempotency-Key",
                            "in": "header",
                            "required": False,
                            "description": "The same key for the same job returns the retry it already created.",
                            "schema": {"type": "string", "minLength": 1, "maxLength": 200},
                        },
                    ],
                    "requestBody": {
                        "required": False,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "additionalProperties": False,
                                    "properties": {
                                        "resumeFrom": {
                                            "type": "string",
                                            "enum": ["checkpoint"],
                                            "description": "Start from this job's latest checkpoint (ADR 0044).",
                                        }
                                    },
                                }
                            }
                        },
                    },
                    "responses": {
                        "202": {**_json("The retry, accepted; Location points at it", "Job", _LOCATION), **_JOB_LINKS},
                        "200": {
                            **_json("The retry this Idempotency-Key already created", "Job", _LOCATION),
                            **_JOB_LINKS,
                        },
                        "400": _problem(
                            "The request no longer passes its checks (an input gone), or the body is not a known "
                            "option; errors name the field"
                        ),
                        **_AUTH_RESPONSES,
                        "404": _problem("No such job, or a job of a project the caller does not belong to"),
                        "409": _problem(
                            "The job is not failed or cancelled, its backend cannot take it, or the key was reused"
                        ),
                        **_UNAVAILABLE,
                    },
                }
            },
            "/backends": {
                "get": {
                    "operationId": "listBackends",
                    "parameters": [_PRINCIPAL],
                    "responses": {"200": _json("Backends", "Backends"), **_AUTH_RESPONSES},
                }
            },
            "/health": {"get": {"operationId": "health", "security": [], "responses": {"200": {"description": "OK"}}}},
            "/openapi.json": {
                "get": {
                    "operationId": "openapi",
                    "security": [],
                    "responses": {"200": {"description": "This document"}},
                }
            },
            **group_paths(_PRINCIPAL, _AUTH_RESPONSES),
            **console_paths(),
            **cost_paths(_PRINCIPAL, _AUTH_RESPONSES, _UNAVAILABLE, _problem, _json),
            **log_paths(_JOB_ID, _PRINCIPAL, _AUTH_RESPONSES, _UNAVAILABLE),
        },
    }
    _json_only(document["paths"])
    # Every nested object becomes a named component: generated clients then have nothing to name (and clash on).
    name_every_object(document)
    return document
