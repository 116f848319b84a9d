"""Parameters and names the workloads cannot run are a 400 problem+json naming the field, and nothing is stored."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from hastegeo.models.ownership import named_inputs, parameter_refs
from hastegeo.workloads.processor import processors
from tests.security.test_api_hostile import api, assert_problem, footprint, submit
from tests.unit.core.test_params import PROBE_FINDINGS, example

PROCESSORS = processors()

__all__ = ["api"]  # the fixture, shared with the hostile-request suite

VALID_INPUTS = [{"blob": "p1/a.tif"}]


def _submit(body: dict[str, Any]) -> tuple[int, Any, Any]:
    return submit(json.dumps(body).encode())


@pytest.mark.usefixtures("api")
@pytest.mark.parametrize(("workload", "change", "name"), PROBE_FINDINGS)
def test_values_the_workload_would_refuse_are_a_400_naming_the_parameter(
    workload: str, change: dict[str, Any], name: str
) -> None:
    before = footprint()
    body = {
        "workload": workload,
        "projectId": "p1",
        "inputs": VALID_INPUTS,
        "parameters": {**example(workload), **change},
    }
    status, problem, response = _submit(body)
    assert_problem(status, problem, response, 400)
    assert re.fullmatch(rf"parameters\.{name}(\[\d+\])?", problem["errors"][0]["field"])
    assert footprint() == before


@pytest.mark.usefixtures("api")
@pytest.mark.parametrize(
    ("item", "field"),
    [({"blob": "p1/x\n"}, "inputs[0].blob"), ({"blob": "p1/x", "dest": "x\n"}, "inputs[0].dest")],
)
def test_a_trailing_newline_in_an_input_name_is_a_400_naming_it(item: dict[str, str], field: str) -> None:
    before = footprint()
    status, problem, response = _submit({"workload": "artifacts", "projectId": "p1", "inputs": [item]})
    assert_problem(status, problem, response, 400)
    assert [error["field"] for error in problem["errors"]] == [field]
    assert footprint() == before


@pytest.mark.usefixtures("api")
def test_the_documented_examples_are_accepted() -> None:
    """The other side of the coin: the published example of every workload is a 202."""
    for workload in ("imagery", "training", "inference", "embedding", "artifacts"):
        # Every file the example names is staged by an input of the job (inputs stay in the project).
        named = named_inputs(
            PROCESSORS[workload].params_model.model_validate(example(workload)),
            parameter_refs(PROCESSORS[workload].params_model),
        )
        inputs = VALID_INPUTS + [{"blob": f"p1/{name}", "dest": name} for _, name in named]
        body = {"workload": workload, "projectId": "p1", "inputs": inputs, "parameters": example(workload)}
        status, job, _ = _submit(body)
        assert status == 202, job
        assert job["parameters"] == example(workload)
