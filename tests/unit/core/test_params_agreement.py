"""What the API accepts, the workload accepts: property-based, for every workload.

Values come from each workload's JSON schema (the one OpenAPI publishes), from
the same schema with its bounds and types removed, and from edge values just
inside and just outside each bound. Every generated ``parameters`` object goes
through the API's path (the processor's ``validate`` on a real ``JobRequest``)
and through the workload's own parsing on compute (``read_params``); both must
accept or both reject. When the API accepts, what the pipeline really sends
(``HASTE_PARAMS_JSON`` of the built spec) must parse on compute too.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

from hastegeo.compute.contract import BlobLocation
from hastegeo.models.job import Job, JobRequest
from hastegeo.models.params import Params, known_keys
from hastegeo.models.states import JobState
from hastegeo.utils.errors import InvalidJobError
from hastegeo.workloads._run.harness import ProgressLog, WorkloadError
from hastegeo.workloads._run.params import read_params
from hastegeo.workloads.processor import SpecInputs, processors
from hastegeo.workloads.registry import descriptors

WORKLOAD_PARAMS = {name: descriptor.params for name, descriptor in descriptors().items()}
PROCESSORS = processors()

WHERE = SpecInputs(inputs_container="in", outputs_container="out", project_of={}.get)
OUTPUT = BlobLocation(container="out", path="jobs/j1")
EXAMPLES = settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
# Any JSON value: what a client can put in a parameter whatever the schema says.
ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minItems", "maxItems", "minLength")


def _edges(schema: dict[str, Any]) -> list[Any]:
    """Values on, just inside and just outside each numeric bound of ``schema`` (and of its items)."""
    values: list[Any] = []
    for option in schema.get("anyOf", [schema]):
        for key in ("minimum", "maximum"):
            if key in option:
                bound = option[key]
                if option.get("type") == "integer":
                    values += [bound - 1, bound, bound + 1, float(bound), str(bound), True]
                else:
                    values += [bound, math.nextafter(bound, -math.inf), math.nextafter(bound, math.inf), str(bound)]
        if "items" in option:
            for edge in _edges(option["items"]):
                values.append([edge] * int(option.get("minItems", 1)))
    values += [2**32, 2**64, 1e15, 1e308, 100, 0.01, 99999, -1, 0, True, "6", "x\n", "", " ", None, []]
    values += [[-1, 0, 99999], [1, 2, 3], ["a", "a"], ["a", "b\n"], [0.0, 0.0, 1.0, 1.0], [-181, 0, 0, 1]]
    return values


def _relaxed(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` without its bounds: values of the right shape but out of range."""
    return {
        key: _relaxed(value) if isinstance(value, dict) else value
        for key, value in schema.items()
        if key not in _BOUNDS
    }


def parameters(model: type[Params]) -> st.SearchStrategy[dict[str, Any]]:
    schema = model.model_json_schema(by_alias=True)
    fields = {}
    for name, field in schema["properties"].items():
        field = {key: value for key, value in field.items() if key not in ("examples", "default", "title")}
        fields[name] = st.one_of(
            st.sampled_from(_edges(field)),
            from_schema(field),
            from_schema(_relaxed(field)),
            ANY_JSON,
        )
    valid = from_schema({key: value for key, value in schema.items() if key != "examples"})
    mixed = st.fixed_dictionaries({}, optional=fields)
    # The documented example with one value replaced: a bad value next to good ones.
    one_change = st.sampled_from(sorted(fields)).flatmap(lambda key: fields[key].map(lambda value: {key: value}))
    perturbed = st.builds(lambda base, change: {**base, **change}, st.sampled_from(schema["examples"]), one_change)
    return st.one_of(valid, perturbed, mixed)


def api_accepts(workload: str, params: dict[str, Any]) -> bool:
    """True if the API accepts; a refusal must name a field under ``parameters``."""
    request = JobRequest.model_validate(
        {"workload": workload, "projectId": "p1", "inputs": [{"blob": "p1/a.tif"}], "parameters": params}
    )
    try:
        PROCESSORS[workload].validate(request)
    except InvalidJobError as exc:
        field = exc.field or ""
    else:
        return True
    assert field.startswith("parameters"), field
    return False


def sent_to_compute(workload: str, params: dict[str, Any]) -> dict[str, Any]:
    """What the pipeline puts in the workload's environment for a job with these parameters."""
    now = "2026-01-01T00:00:00Z"
    job = Job.model_validate(
        {
            "id": "j1",
            "projectId": "p1",
            "workload": workload,
            "state": JobState.QUEUED,
            "requestedBackend": "auto",
            "backend": "local",
            "inputs": [{"blob": "p1/a.tif"}],
            "parameters": params,
            "createdAt": now,
            "updatedAt": now,
            "deadlineAt": now,
        }
    )
    sent: dict[str, Any] = json.loads(PROCESSORS[workload].build_spec(job, WHERE, OUTPUT).env["HASTE_PARAMS_JSON"])
    return sent


def workload_accepts(workload: str, params: dict[str, Any], progress: ProgressLog) -> bool:
    """True if compute accepts; a refusal must name the parameter."""
    try:
        read_params(WORKLOAD_PARAMS[workload], params, progress)
    except WorkloadError as exc:
        reason = str(exc)
    else:
        return True
    assert reason.startswith("parameter '"), reason
    return False


@pytest.mark.parametrize("workload", sorted(WORKLOAD_PARAMS))
def test_the_api_and_the_workload_accept_the_same_parameters(workload: str, tmp_path: Path) -> None:
    progress = ProgressLog(tmp_path / "progress.log")
    request_model = PROCESSORS[workload].params_model
    pipeline_only = known_keys(request_model) - known_keys(WORKLOAD_PARAMS[workload])
    seen = {True: 0, False: 0}

    @EXAMPLES
    @given(params=parameters(request_model))
    def check(params: dict[str, Any]) -> None:
        accepted = api_accepts(workload, params)
        # The workload never sees the pipeline's own keys, whether or not they are valid.
        for_workload = {key: value for key, value in params.items() if key not in pipeline_only}
        if not all(isinstance(params[key], bool) for key in pipeline_only & params.keys()):
            assert not accepted, params  # a bad pipeline key is the API's to refuse
            return
        assert workload_accepts(workload, for_workload, progress) == accepted, params
        if accepted:
            assert workload_accepts(workload, sent_to_compute(workload, params), progress), params
        seen[accepted] += 1

    check()
    progress.close()
    # Both outcomes were exercised, so the agreement is not vacuous.
    assert seen[True] > 5, seen
    assert seen[False] > 5, seen


@pytest.mark.parametrize("workload", sorted(WORKLOAD_PARAMS))
def test_every_edge_value_of_every_parameter_gets_the_same_answer(workload: str, tmp_path: Path) -> None:
    """Deterministic: the documented example with each parameter set to each value near or past its bounds."""
    progress = ProgressLog(tmp_path / "progress.log")
    model = WORKLOAD_PARAMS[workload]
    schema = model.model_json_schema(by_alias=True)
    base = schema["examples"][0]
    disagreements = []
    outcomes = set()
    for name, field in schema["properties"].items():
        for value in _edges(field):
            params = {**base, name: value}
            accepted = api_accepts(workload, params)
            outcomes.add(accepted)
            if workload_accepts(workload, params, progress) != accepted:
                disagreements.append((name, value, accepted))
    progress.close()
    assert disagreements == []
    assert outcomes == {True, False}
