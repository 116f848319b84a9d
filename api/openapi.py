"""The OpenAPI 3.1 document of the HTTP API, built from the same pydantic models the API validates with."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from hastegeo import __version__
from hastegeo.models.job import Job, JobRequest
from hastegeo.models.states import JobState
from hastegeo.processors import PROCESSORS

_REF = "#/components/schemas/"


def _problem(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/problem+json": {"schema": {"$ref": _REF + "Problem"}}}}


def _json(description: str, schema: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": {"$ref": _REF + schema}}}}


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

_ID_PATTERN = "^[a-z0-9][a-z0-9-]{0,62}$"
_JOB_ID = {
    "name": "id",
    "in": "path",
    "required": True,
    "schema": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]{0,62}$"},
}


def _parameter_schemas(schemas: dict[str, Any]) -> None:
    """Each workload's ``parameters`` schema (bounds, descriptions, an example), tied to ``workload`` in JobRequest.

    Built from the model the processor validates with, which is also the
    model the workload reads on compute; ``if``/``then`` (JSON Schema
    2020-12, which OpenAPI 3.1 uses) applies the one matching ``workload``.
    """
    rules = []
    for workload, processor in PROCESSORS.items():
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


@lru_cache(maxsize=1)
def openapi_document() -> dict[str, Any]:
    schemas: dict[str, Any] = {}
    for name, model in (("JobRequest", JobRequest), ("Job", Job)):
        schema = model.model_json_schema(by_alias=True, ref_template=_REF + "{model}", mode="validation")
        schemas.update(schema.pop("$defs", {}))
        schemas[name] = schema
    _parameter_schemas(schemas)
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
                    "type": "object",
                    "properties": {"field": {"type": "string"}, "message": {"type": "string"}},
                },
            },
        },
    }
    schemas["JobPage"] = {
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": {"$ref": _REF + "Job"}},
            "continuationToken": {"type": ["string", "null"]},
        },
    }
    schemas["Backends"] = {
        "type": "object",
        "properties": {"default": {"type": "string"}, "backends": {"type": "array"}},
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "haste-compute",
            "version": __version__,
            "description": (
                "Every route except /health and /openapi.json needs a function key and a caller identified by "
                "App Service authentication. Roles: Haste.Reader lists and reads, Haste.Submitter also submits "
                "and cancels, Haste.Admin does everything in every project. Others' jobs are reachable only "
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
        "security": [{"functionKey": [], "entraId": []}],
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
                        "202": _json("Accepted; Location points at the job", "Job"),
                        "200": _json("The job this Idempotency-Key already created", "Job"),
                        "400": _problem("Invalid request; errors name the fields"),
                        **_AUTH_RESPONSES,
                        "409": _problem("Backend unavailable, or Idempotency-Key reused"),
                        "413": _problem("Body too large"),
                        "429": _problem("Too many submissions on this instance; see Retry-After"),
                    },
                },
                "get": {
                    "operationId": "listJobs",
                    "parameters": [
                        _PRINCIPAL,
                        {
                            "name": "projectId",
                            "in": "query",
                            "required": True,
                            "schema": {"type": "string", "pattern": _ID_PATTERN},
                        },
                        {
                            "name": "state",
                            "in": "query",
                            "required": False,
                            "schema": {"type": "string", "enum": [s.value for s in JobState]},
                        },
                        {
                            "name": "pageSize",
                            "in": "query",
                            "required": False,
                            "schema": {"type": "integer", "minimum": 1, "maximum": 200},
                        },
                        {"name": "continuationToken", "in": "query", "required": False, "schema": {"type": "string"}},
                    ],
                    "responses": {
                        "200": _json("A page of jobs, newest first", "JobPage"),
                        "400": _problem("Bad query"),
                        **_AUTH_RESPONSES,
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
                        "401": _AUTH_RESPONSES["401"],
                        "404": _problem("No such job, or a job of a project the caller does not belong to"),
                    },
                }
            },
            "/jobs/{id}/cancel": {
                "post": {
                    "operationId": "cancelJob",
                    "parameters": [_JOB_ID, _PRINCIPAL],
                    "responses": {
                        "202": _json("Cancellation recorded", "Job"),
                        **_AUTH_RESPONSES,
                        "404": _problem("No such job, or a job of a project the caller does not belong to"),
                        "409": _problem("The job can no longer be cancelled"),
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
        },
    }
