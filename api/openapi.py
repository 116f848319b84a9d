"""The OpenAPI 3.1 document of the HTTP API, built from the same pydantic models the API validates with."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from hastegeo import __version__
from hastegeo.models.job import Job, JobRequest
from hastegeo.models.states import JobState

_REF = "#/components/schemas/"


def _problem(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/problem+json": {"schema": {"$ref": _REF + "Problem"}}}}


def _json(description: str, schema: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": {"$ref": _REF + schema}}}}


_JOB_ID = {
    "name": "id",
    "in": "path",
    "required": True,
    "schema": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]{0,62}$"},
}


@lru_cache(maxsize=1)
def openapi_document() -> dict[str, Any]:
    schemas: dict[str, Any] = {}
    for name, model in (("JobRequest", JobRequest), ("Job", Job)):
        schema = model.model_json_schema(by_alias=True, ref_template=_REF + "{model}", mode="validation")
        schemas.update(schema.pop("$defs", {}))
        schemas[name] = schema
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
        "info": {"title": "haste-compute", "version": __version__},
        "servers": [{"url": "/api"}],
        "components": {
            "schemas": schemas,
            "securitySchemes": {"functionKey": {"type": "apiKey", "in": "header", "name": "x-functions-key"}},
        },
        "security": [{"functionKey": []}],
        "paths": {
            "/jobs": {
                "post": {
                    "operationId": "submitJob",
                    "parameters": [
                        {
                            "name": "Idempotency-Key",
                            "in": "header",
                            "required": False,
                            "schema": {"type": "string", "minLength": 1, "maxLength": 200},
                        }
                    ],
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": {"$ref": _REF + "JobRequest"}}},
                    },
                    "responses": {
                        "202": _json("Accepted; Location points at the job", "Job"),
                        "200": _json("The job this Idempotency-Key already created", "Job"),
                        "400": _problem("Invalid request; errors name the fields"),
                        "409": _problem("Backend unavailable, or Idempotency-Key reused"),
                        "413": _problem("Body too large"),
                    },
                },
                "get": {
                    "operationId": "listJobs",
                    "parameters": [
                        {"name": "projectId", "in": "query", "required": True, "schema": {"type": "string"}},
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
                    },
                },
            },
            "/jobs/{id}": {
                "get": {
                    "operationId": "getJob",
                    "parameters": [
                        _JOB_ID,
                        {
                            "name": "readUrls",
                            "in": "query",
                            "required": False,
                            "description": "true: add a read-only URL valid for 15 minutes to each output",
                            "schema": {"type": "string", "enum": ["true", "false"]},
                        },
                    ],
                    "responses": {"200": _json("The job", "Job"), "404": _problem("No such job")},
                }
            },
            "/jobs/{id}/cancel": {
                "post": {
                    "operationId": "cancelJob",
                    "parameters": [_JOB_ID],
                    "responses": {
                        "202": _json("Cancellation recorded", "Job"),
                        "404": _problem("No such job"),
                        "409": _problem("The job can no longer be cancelled"),
                    },
                }
            },
            "/backends": {"get": {"operationId": "listBackends", "responses": {"200": _json("Backends", "Backends")}}},
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
