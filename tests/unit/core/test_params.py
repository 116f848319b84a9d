"""The workload parameter models: strict, bounded as the workloads run, one spelling, documented as they are."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from api.openapi import openapi_document
from hastegeo.models.job import JobRequest
from hastegeo.models.params import Params, known_keys
from hastegeo.utils.errors import InvalidJobError
from hastegeo.workloads._run.harness import ProgressLog, WorkloadError
from hastegeo.workloads._run.params import read_params
from hastegeo.workloads.geospatial import PIPELINE_KEYS
from hastegeo.workloads.processor import processors
from hastegeo.workloads.registry import descriptors

WORKLOAD_PARAMS = {name: descriptor.params for name, descriptor in descriptors().items()}
PROCESSORS = processors()

DOCS = Path(__file__).resolve().parents[3] / "docs" / "workloads.md"

# What an outside probe found the API accepting and the workload then refusing (exit code 2).
PROBE_FINDINGS = [
    ("training", {"seed": 2**32}, "seed"),
    ("training", {"learningRate": 1e308}, "learningRate"),
    ("training", {"l2": 100}, "l2"),
    ("training", {"validationFraction": 0.01}, "validationFraction"),
    ("training", {"maxSamplesPerClass": 1e15}, "maxSamplesPerClass"),
    ("embedding", {"seed": 2**64}, "seed"),
    ("imagery", {"rgbBands": [-1, 0, 99999]}, "rgbBands"),
    ("artifacts", {"compressLevel": "6"}, "compressLevel"),
    ("artifacts", {"compressLevel": True}, "compressLevel"),
]


def example(workload: str) -> dict[str, Any]:
    examples: list[dict[str, Any]] = WORKLOAD_PARAMS[workload].model_json_schema(by_alias=True)["examples"]
    return dict(examples[0])


def validate(workload: str, parameters: dict[str, Any]) -> None:
    request = JobRequest.model_validate(
        {"workload": workload, "projectId": "p1", "inputs": [{"blob": "p1/a.tif"}], "parameters": parameters}
    )
    PROCESSORS[workload].validate(request)


@pytest.mark.parametrize(("workload", "change", "name"), PROBE_FINDINGS)
def test_probe_findings_are_refused_by_the_api_and_by_the_workload(
    workload: str, change: dict[str, Any], name: str, tmp_path: Path
) -> None:
    params = {**example(workload), **change}
    with pytest.raises(InvalidJobError) as caught:
        validate(workload, params)
    assert caught.value.field is not None
    assert re.fullmatch(rf"parameters\.{name}(\[\d+\])?", caught.value.field)
    progress = ProgressLog(tmp_path / "progress.log")
    with pytest.raises(WorkloadError, match=rf"^parameter '{name}(\[\d+\])?': "):
        read_params(WORKLOAD_PARAMS[workload], params, progress)
    progress.close()


def _fields(workload: str) -> list[tuple[str, str]]:
    """(alias, JSON type) of every scalar and array-of-scalar parameter of a workload's request model."""
    found = []
    for name, field in PROCESSORS[workload].params_model.model_json_schema(by_alias=True)["properties"].items():
        option = next((o for o in field.get("anyOf", [field]) if o.get("type") != "null"), field)
        kind = option["type"] if option["type"] != "array" else f"array of {option['items']['type']}"
        found.append((name, kind))
    return found


# Values of the wrong JSON type that a lax model would coerce, per declared type.
COERCIBLE: dict[str, list[Any]] = {
    "integer": ["6", True, 6.0, "0x10", None],
    "number": ["0.5", True, float("nan"), float("inf"), None],
    "boolean": ["true", 1, 0, "yes", None],
    "string": [6, True, ["a"], None],
}


@pytest.mark.parametrize(
    ("workload", "name", "kind"),
    [(workload, name, kind) for workload in sorted(PROCESSORS) for name, kind in _fields(workload)],
)
def test_no_parameter_is_coerced(workload: str, name: str, kind: str) -> None:
    """Every parameter of every workload: a value of the wrong type is a 400 naming it, never converted."""
    item_kind = kind.removeprefix("array of ")
    nullable = PROCESSORS[workload].params_model.model_fields[_field_name(workload, name)].default is None
    for value in COERCIBLE[item_kind]:
        if value is None and (nullable or kind.startswith("array")):
            continue
        bad = value if kind == item_kind else [value] * 4
        with pytest.raises(InvalidJobError) as caught:
            validate(workload, {**example(workload), name: bad})
        assert (caught.value.field or "").startswith(f"parameters.{name}"), (name, bad)


def _field_name(workload: str, alias: str) -> str:
    model = PROCESSORS[workload].params_model
    return next(name for name, field in model.model_fields.items() if (field.alias or name) == alias)


@pytest.mark.parametrize("workload", sorted(WORKLOAD_PARAMS))
def test_snake_case_spellings_are_unknown_fields(workload: str) -> None:
    """One spelling: ``run_inference`` would slip past the code that reads and strips ``runInference``."""
    model = PROCESSORS[workload].params_model
    for name, field in model.model_fields.items():
        if field.alias and field.alias != name:
            with pytest.raises(InvalidJobError) as caught:
                validate(workload, {**example(workload), name: field.default})
            assert caught.value.field == f"parameters.{name}"


def test_pipeline_keys_are_exactly_what_the_request_models_add() -> None:
    added = set()
    for workload, model in WORKLOAD_PARAMS.items():
        added |= known_keys(PROCESSORS[workload].params_model) - known_keys(model)
    assert added == PIPELINE_KEYS


@pytest.mark.parametrize("workload", sorted(WORKLOAD_PARAMS))
def test_each_documented_example_is_valid(workload: str) -> None:
    validate(workload, example(workload))


# Every string parameter that carries a pattern or a path rule, with a trailing newline.
NEWLINE_PARAMETERS = [
    ("imagery", {"sources": ["scene.tif\n"]}, "parameters.sources[0]"),
    ("imagery", {"sources": ["https://data.example.org/a.tif\n"]}, "parameters.sources[0]"),
    ("imagery", {"allowedHosts": ["data.example.org\n"]}, "parameters.allowedHosts[0]"),
    ("training", {"classes": ["water\n", "land"]}, "parameters.classes[0]"),
    ("training", {"classes": ["water", "land"], "classProperty": "class\n"}, "parameters.classProperty"),
    ("training", {"classes": ["water", "land"], "imagery": "imagery.tif\n"}, "parameters.imagery"),
    ("training", {"classes": ["water", "land"], "labels": "labels.geojson\n"}, "parameters.labels"),
    ("inference", {"model": "model/model.json\n"}, "parameters.model"),
    ("inference", {"buildings": "buildings.geojson\n"}, "parameters.buildings"),
    ("embedding", {"imagery": "imagery.tif\n"}, "parameters.imagery"),
]


@pytest.mark.parametrize(("workload", "parameters", "field"), NEWLINE_PARAMETERS)
def test_a_trailing_newline_is_refused_in_every_named_parameter(
    workload: str, parameters: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidJobError) as caught:
        validate(workload, parameters)
    assert caught.value.field == field


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({"projectId": "p1\n"}, ("projectId",)),
        ({"inputs": [{"jobId": "j1\n"}]}, ("inputs", 0, "jobId")),
        ({"inputs": [{"blob": "p1/x\n"}]}, ("inputs", 0, "blob")),
        ({"inputs": [{"blob": "p1/x", "dest": "x\n"}]}, ("inputs", 0, "dest")),
        ({"labels": {"team\n": "a"}}, ("labels",)),
    ],
)
def test_a_trailing_newline_is_refused_in_every_request_field_with_a_pattern(
    body: dict[str, Any], loc: tuple[Any, ...]
) -> None:
    """Pydantic's ``pattern`` runs on Rust's regex engine, where ``$`` ends the text; proven here, not assumed."""
    with pytest.raises(ValidationError) as caught:
        JobRequest.model_validate({"workload": "artifacts", "projectId": "p1", **body})
    assert caught.value.errors()[0]["loc"] == loc


def test_every_pattern_in_the_published_document_refuses_a_trailing_newline() -> None:
    """The OpenAPI patterns are ECMA-262 regexes: without the 'm' flag '$' is the end of input as well."""
    patterns = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("pattern"), str):
                patterns.add(node["pattern"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(openapi_document())
    assert patterns
    for pattern in patterns:
        assert pattern.startswith("^"), pattern
        assert pattern.endswith("$"), pattern
        # What a full match accepts, with a newline appended: refused by a full match, as by ECMA's '$'.
        assert not re.fullmatch(pattern[1:-1], "a\n")


def test_openapi_publishes_each_workloads_parameters_with_bounds_and_an_example() -> None:
    schemas = openapi_document()["components"]["schemas"]
    applied = {rule["if"]["properties"]["workload"]["const"]: rule for rule in schemas["JobRequest"]["allOf"]}
    assert set(applied) == set(WORKLOAD_PARAMS)
    for workload, model in WORKLOAD_PARAMS.items():
        name = applied[workload]["then"]["properties"]["parameters"]["$ref"].rsplit("/", 1)[-1]
        published = schemas[name]
        assert published["additionalProperties"] is False
        assert set(published["properties"]) == known_keys(PROCESSORS[workload].params_model)
        assert published["examples"] == model.model_json_schema(by_alias=True)["examples"]
        for prop, field in published["properties"].items():
            assert field.get("description"), (workload, prop)
    seed = schemas["TrainingParameters"]["properties"]["seed"]
    assert (seed["minimum"], seed["maximum"]) == (0, 2**32 - 1)


# -- docs/workloads.md agrees with the models ---------------------------------------------------------------------


def allowed(field: dict[str, Any]) -> str:
    """The 'Allowed' cell of a parameter's row in docs/workloads.md, from its JSON schema."""
    option = next((o for o in field.get("anyOf", [field]) if o.get("type") != "null"), field)
    kind = option["type"]
    if kind in ("integer", "number"):
        if "minimum" not in option:
            return kind
        return f"{kind} {_number(option['minimum'])} to {_number(option['maximum'])}"
    if kind == "array":
        inner = allowed(option["items"])
        count = option["minItems"] if option["minItems"] == option["maxItems"] else None
        items = f"{count}" if count else f"{option['minItems']} to {option['maxItems']}"
        return f"{items} × {inner}"
    if kind == "string":
        return f"{option['minLength']} to {option['maxLength']} characters"
    return str(kind)


def _number(value: float) -> str:
    return str(value) if isinstance(value, int) else f"{value:g}"


def documented(workload: str) -> dict[str, str]:
    """Parameter -> 'Allowed' cell of the first table under ``## <workload>``."""
    section = DOCS.read_text(encoding="utf-8").split(f"\n## {workload}\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) == 4:
            rows[cells[0].strip("`")] = cells[2]
        elif rows:
            break
    return rows


@pytest.mark.parametrize("workload", sorted(WORKLOAD_PARAMS))
def test_docs_list_every_parameter_with_the_models_bounds(workload: str) -> None:
    model: type[Params] = WORKLOAD_PARAMS[workload]
    properties = model.model_json_schema(by_alias=True)["properties"]
    expected = {name: allowed(field) for name, field in properties.items()}
    assert documented(workload) == expected
