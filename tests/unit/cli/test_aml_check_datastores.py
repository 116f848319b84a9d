"""``haste aml check`` looks up the datastores every job mounts, against the stand-in client."""

from __future__ import annotations

import io

from hastegeo.cli import aml
from hastegeo_dev.testing.aml_standin import StandInMLClient

ENV = {
    "AML_MODE": "Create",
    "AML_SUBSCRIPTION_ID": "sub",
    "AML_RESOURCE_GROUP": "rg",
    "AML_WORKSPACE": "ws",
    "AML_IMAGE": "crhaste.azurecr.io/haste-train:1",
    "AML_RETRY_DELAY_S": "0",
}


def check(client: StandInMLClient, **env: str) -> tuple[int, str]:
    out = io.StringIO()
    code = aml.run_check(environ={**ENV, **env}, client_factory=lambda _: client, probe=lambda _: None, out=out)
    return code, out.getvalue()


def test_both_datastores_found_is_ready() -> None:
    code, text = check(StandInMLClient())
    assert code == 0, text
    assert "found: datastore haste_inputs" in text
    assert "found: datastore haste_outputs" in text
    assert "environment image: crhaste.azurecr.io/haste-train:1" in text


def test_a_missing_inputs_datastore_is_a_problem_naming_the_setting() -> None:
    client = StandInMLClient(datastores=("haste_outputs",))
    code, text = check(client)
    assert code == 1
    problem = next(line for line in text.splitlines() if line.startswith("problem:"))
    assert "haste_inputs" in problem
    assert "AML_DATASTORES" in problem
    assert "1 problem(s) found" in text


def test_the_containers_and_the_mapping_come_from_the_settings() -> None:
    client = StandInMLClient(datastores=("raw_in", "results"))
    code, text = check(
        client, HASTE_INPUTS_CONTAINER="raw-in", HASTE_OUTPUTS_CONTAINER="out", AML_DATASTORES="out=results"
    )
    assert code == 0, text
    assert ("datastores.get", "raw_in") in client.calls
    assert ("datastores.get", "results") in client.calls
