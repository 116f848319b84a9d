"""The OpenAPI document leaves generators nothing to name: every object is a component, names cannot clash.

The walk covers the whole served document (components and every operation's parameters,
bodies, answers and headers), so a schema added later is held to the same rule.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from openapi_spec_validator import validate

from api.openapi import openapi_document
from api.openapi_names import is_object_schema, name_every_object, nested_schemas, operation_schemas, pascal


def inline_schemas(document: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, schema) for every schema position a generator builds a type from, below the components' tops."""

    def below(schema: Any, where: str) -> Iterator[tuple[str, dict[str, Any]]]:
        if not isinstance(schema, dict):
            return
        for container, key, _ in nested_schemas(schema, ""):
            child = container[key]  # type: ignore[index]
            yield f"{where}/{key}", child
            yield from below(child, f"{where}/{key}")

    for name, schema in document["components"]["schemas"].items():
        yield from below(schema, f"#/components/schemas/{name}")
    for container, key, suggested in operation_schemas(document):
        yield f"{suggested} ({key})", container[key]
        yield from below(container[key], suggested)


def enum_names(document: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, the names a generator may give it) for inline enums: owner + property, owner + title."""

    def below(schema: Any, owner: str, where: str) -> Iterator[tuple[str, str]]:
        if not isinstance(schema, dict):
            return
        for container, key, suggested in nested_schemas(schema, owner):
            child = container[key]  # type: ignore[index]
            if isinstance(child, dict) and "enum" in child:
                yield f"{where}/{key}", suggested
                if "title" in child:
                    yield f"{where}/{key}", owner + pascal(child["title"])
            yield from below(child, suggested, f"{where}/{key}")

    for name, schema in document["components"]["schemas"].items():
        yield from below(schema, name, name)


def test_no_object_is_left_inline_anywhere() -> None:
    document = openapi_document()
    inline = [where for where, schema in inline_schemas(document) if is_object_schema(schema)]
    assert inline == []


def test_each_component_is_named_by_its_title_and_no_two_names_meet_in_a_generator() -> None:
    schemas = openapi_document()["components"]["schemas"]
    assert all(schema.get("title") == name for name, schema in schemas.items())
    lowered = [pascal(name).lower() for name in schemas]
    assert len(lowered) == len(set(lowered))
    components = set(lowered)
    clashes = [(where, name) for where, name in enum_names(openapi_document()) if name.lower() in components]
    assert clashes == []


def test_the_job_answers_that_clashed_now_reference_components() -> None:
    schemas = openapi_document()["components"]["schemas"]
    assert schemas["Job"]["properties"]["summary"]["$ref"] == "#/components/schemas/Summary"
    assert schemas["JobSummary"]["properties"]["summary"]["$ref"] == "#/components/schemas/Summary"
    assert "lastEvent" in schemas["JobSummary"]["properties"]


def test_every_reference_resolves_and_the_document_validates() -> None:
    document = openapi_document()
    validate(document)  # openapi-spec-validator: OpenAPI 3.1 (JSON Schema 2020-12) rules, refs resolved


def test_naming_hoists_nested_objects_shares_equal_shapes_and_keeps_use_site_words() -> None:
    labels = {"title": "Labels", "type": "object", "additionalProperties": {"type": "string"}}
    document: dict[str, Any] = {
        "components": {
            "schemas": {
                "Job": {
                    "type": "object",
                    "properties": {
                        "summary": {"title": "Summary", "type": "object", "description": "figures"},
                        "labels": dict(labels),
                        "tags": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
                        "owner": {
                            "anyOf": [{"type": "object", "properties": {"n": {"type": "string"}}}, {"type": "null"}]
                        },
                    },
                },
                "JobSummary": {"type": "object", "properties": {"labels": dict(labels)}},
                "Summary2": {"type": "string"},
                "Unused": {"type": "object"},
            }
        },
        "paths": {
            "/x": {
                "get": {
                    "operationId": "getX",
                    "responses": {
                        "200": {
                            "description": "x",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "properties": {"job": {"$ref": "#/components/schemas/Job"}},
                                    }
                                }
                            },
                        }
                    },
                }
            },
            "/y": {
                "get": {
                    "operationId": "getY",
                    "responses": {
                        "200": {
                            "description": "y",
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/JobSummary"}}},
                        }
                    },
                }
            },
        },
    }
    name_every_object(document)
    schemas = document["components"]["schemas"]
    job = schemas["Job"]["properties"]
    assert job["summary"] == {"$ref": "#/components/schemas/Summary", "description": "figures"}
    assert job["labels"] == schemas["JobSummary"]["properties"]["labels"] == {"$ref": "#/components/schemas/Labels"}
    assert job["tags"]["items"] == {"$ref": "#/components/schemas/JobTagsItem"}
    assert job["owner"]["anyOf"][0] == {"$ref": "#/components/schemas/JobOwner"}
    answer = document["paths"]["/x"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert answer == {"$ref": "#/components/schemas/GetXResponse200"}
    assert "Unused" not in schemas
    assert "Summary2" not in schemas
    assert all(schema["title"] == name for name, schema in schemas.items())
