"""``haste doctor`` on the command line: table and JSON, exit codes, ``--only``, and a fast ``--help``."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from hastegeo.cli.main import build_parser
from hastegeo.doctor.cli import run_doctor
from tests.unit.doctor.conftest import SUB, Deployment
from tests.unit.doctor.replay import recorded


def doctor(deployment: Deployment, *argv: str) -> tuple[int, str]:
    args = build_parser().parse_args(
        ["doctor", "--subscription", SUB, "--resource-group", "rg-haste-dev", "--app", "func-haste-abc123", *argv]
    )
    out = io.StringIO()
    return run_doctor(args, deployment.clients(), out), out.getvalue()


def test_a_healthy_deployment_exits_zero_with_a_table(deployment: Deployment) -> None:
    code, text = doctor(deployment)
    assert code == 0, text
    assert "FAIL" not in text
    assert text.rstrip().endswith("35 pass")


def test_json_output_lists_every_check_and_a_failure_exits_one(deployment: Deployment) -> None:
    deployment.arm.add("GET", r"/batchAccounts/bahasteabc123/pools\?", {**recorded("pools"), "body": {"value": []}})
    code, text = doctor(deployment, "--output", "json", "--only", "batch")
    report = json.loads(text)
    assert code == 1
    assert report["ok"] is False
    assert report["failing"] == 5
    failing = [c for c in report["checks"] if c["status"] == "fail"]
    assert {c["name"] for c in failing} == {
        f"pool haste-{w}" for w in ("imagery", "embedding", "artifacts", "training", "inference")
    }
    assert all(c["fix"] and c["area"] == "batch" for c in failing)


def test_only_repeats(deployment: Deployment) -> None:
    code, text = doctor(deployment, "--only", "easyauth", "--only", "telemetry", "--output", "json")
    assert code == 0
    assert {c["area"] for c in json.loads(text)["checks"]} == {"easyauth", "telemetry"}


def test_without_a_target_it_says_how_to_name_one(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("AZURE_SUBSCRIPTION_ID", "AZURE_RESOURCE_GROUP", "FUNCTION_APP_NAME"):
        monkeypatch.delenv(name, raising=False)
    args = build_parser().parse_args(["doctor"])
    assert run_doctor(args) == 2
    assert "azd env get-values" in capsys.readouterr().err


def test_the_target_defaults_to_azds_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_SUBSCRIPTION_ID", SUB)
    monkeypatch.setenv("AZURE_RESOURCE_GROUP", "rg-x")
    monkeypatch.setenv("FUNCTION_APP_NAME", "func-x")
    args = build_parser().parse_args(["doctor"])
    assert (args.subscription, args.resource_group, args.app) == (SUB, "rg-x", "func-x")


PROBE = """
import sys
from hastegeo.cli.main import build_parser
try:
    build_parser().parse_args(["doctor", "--help"])
except SystemExit:
    pass
print(sorted(m for m in sys.modules if m.startswith(("azure.mgmt", "azure.monitor", "azure.ai"))))
"""


def test_the_cli_loads_no_management_sdk_until_the_doctor_runs() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.strip().endswith("[]"), done.stdout


def test_without_the_extra_it_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name.startswith("azure.mgmt") else real(name, *a)
    )
    args = build_parser().parse_args(["doctor", "--subscription", SUB, "--resource-group", "rg", "--app", "app"])
    assert run_doctor(args) == 2
    assert "hastegeo[doctor]" in capsys.readouterr().err
