"""Give every object schema in the OpenAPI document a name of its own, so generated clients cannot clash.

Client generators turn each inline object schema into a class named after where it
sits: ``openapi-python-client`` names ``Job``'s inline ``summary`` object
``JobSummary``, which is also the name of a component, and then drops ``Job``
altogether. Such clashes depend on each generator's naming rules, so the document
leaves nothing to name: every object nested in a schema (a property, an array's
items, a map's values, a member of ``anyOf``/``oneOf``/``allOf``) and every object a
path answers with or accepts becomes a component with a unique name, referenced by
``$ref``. A component is named after its ``title`` when that is free (titles are how
the document's author names a thing: ``FieldError``, ``Backend``), else after its
owner and the property; identical shapes with the same title share one component. Each component's
``title`` is set to its key, because generators name a component's class after its
title. Components nothing references (the job's internal bookkeeping) are dropped.

Pure: it rewrites a document (a dict) in place and is unit-tested on its own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

REF = "#/components/schemas/"
# What stays beside the $ref at the place of use: how this use is described, not what the object is.
_USE_SITE = ("description", "default", "deprecated", "readOnly", "writeOnly")
_COMBINERS = ("anyOf", "oneOf", "allOf")


def pascal(text: str) -> str:
    """``providerIds`` -> ``ProviderIds``, ``job_state`` -> ``JobState`` (word boundaries kept, not lowered)."""
    words = re.split(r"[^A-Za-z0-9]+", text)
    return "".join(word[:1].upper() + word[1:] for word in words if word)


def is_object_schema(schema: Any) -> bool:
    """An inline schema a generator turns into a class: properties, a map, or ``type: object``."""
    if not isinstance(schema, dict) or "$ref" in schema:
        return False
    kind = schema.get("type")
    is_object = kind == "object" or (isinstance(kind, list) and "object" in kind)
    return is_object or "properties" in schema or "additionalProperties" in schema


def nested_schemas(schema: dict[str, Any], owner: str) -> Iterator[tuple[dict[str, Any], str | int, str]]:
    """(container, key, suggested name) for each schema position directly inside ``schema``.

    Only positions a generator builds types from: ``if``/``then``/``not`` select, they declare nothing.
    """
    for name in list(schema.get("properties", {})):
        yield schema["properties"], name, owner + pascal(name)
    if isinstance(schema.get("items"), dict):
        yield schema, "items", owner + "Item"
    if isinstance(schema.get("additionalProperties"), dict):
        yield schema, "additionalProperties", owner + "Value"
    for combiner in _COMBINERS:
        for index, _ in enumerate(schema.get(combiner, [])):
            yield schema[combiner], index, owner


def operation_schemas(document: dict[str, Any]) -> Iterator[tuple[dict[str, Any], str, str]]:
    """(container, key, suggested name) for each schema a path's operations accept or answer with."""
    for path_item in document.get("paths", {}).values():
        for method, operation in path_item.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            base = pascal(operation.get("operationId", method))
            for parameter in operation.get("parameters", []):
                if "schema" in parameter:
                    yield parameter, "schema", base + pascal(parameter["name"])
            for media in operation.get("requestBody", {}).get("content", {}).values():
                yield media, "schema", base + "Body"
            for status, response in operation["responses"].items():
                for media in response.get("content", {}).values():
                    yield media, "schema", f"{base}Response{status}"
                for header, spec in response.get("headers", {}).items():
                    yield spec, "schema", f"{base}{pascal(header)}Header"


class _Namer:
    def __init__(self, schemas: dict[str, Any]) -> None:
        self.schemas = schemas
        self.by_shape: dict[str, str] = {}
        self.taken = {name.lower() for name in schemas}

    def hoist(self, container: dict[str, Any] | list[Any], key: str | int, suggested: str) -> None:
        """Replace the object schema at ``container[key]`` by a ``$ref`` to a component, after its own nested ones."""
        schema = container[key]  # type: ignore[index]
        if not isinstance(schema, dict):
            return
        if not is_object_schema(schema):
            self.walk(schema, suggested)
            return
        shape = {k: v for k, v in schema.items() if k not in _USE_SITE}
        title = pascal(str(shape.pop("title", "")))
        self.walk(shape, title or suggested)
        # Same shape and same title: one thing used in several places. A different title is another thing.
        fingerprint = json.dumps([title, shape], sort_keys=True)
        name = self.by_shape.get(fingerprint)
        if name is None:
            name = self._free(title, suggested)
            self.schemas[name] = {"title": name, **shape}
            self.by_shape[fingerprint] = name
        use = {k: schema[k] for k in _USE_SITE if k in schema}
        container[key] = {"$ref": REF + name, **use}  # type: ignore[index]

    def walk(self, schema: dict[str, Any], owner: str) -> None:
        for container, key, suggested in list(nested_schemas(schema, owner)):
            self.hoist(container, key, suggested)

    def _free(self, title: str, suggested: str) -> str:
        candidates = [title, suggested, suggested + title] if title else [suggested]
        for candidate in candidates:
            if candidate and candidate.lower() not in self.taken:
                self.taken.add(candidate.lower())
                return candidate
        number = 2
        while f"{suggested}{number}".lower() in self.taken:
            number += 1
        self.taken.add(f"{suggested}{number}".lower())
        return f"{suggested}{number}"


def name_every_object(document: dict[str, Any]) -> None:
    """Hoist every nested or inline object schema of ``document`` into a named component (in place)."""
    schemas: dict[str, Any] = document.setdefault("components", {}).setdefault("schemas", {})
    namer = _Namer(schemas)
    for name in list(schemas):
        schemas[name]["title"] = name
        namer.walk(schemas[name], name)
    for container, key, suggested in list(operation_schemas(document)):
        namer.hoist(container, key, suggested)
    drop_unreferenced(document)


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(REF):
            yield ref.removeprefix(REF)
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def drop_unreferenced(document: dict[str, Any]) -> None:
    """Remove components no path reaches, directly or through other components."""
    schemas = document["components"]["schemas"]
    reached: set[str] = set()
    pending = list(_refs(document.get("paths", {})))
    while pending:
        name = pending.pop()
        if name not in reached and name in schemas:
            reached.add(name)
            pending.extend(_refs(schemas[name]))
    for name in [name for name in schemas if name not in reached]:
        del schemas[name]
