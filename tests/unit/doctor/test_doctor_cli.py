"""``haste doctor`` on the command line: table and JSON, exit codes, ``--only``, and a fast ``--help``."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

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
    assert text.rstrip().endswith("45 pass")


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
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for name in ("AZURE_SUBSCRIPTION_ID", "AZURE_RESOURCE_GROUP", "FUNCTION_APP_NAME", "AZURE_ENV_NAME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    args = build_parser().parse_args(["doctor"])
    assert run_doctor(args) == 2
    err = capsys.readouterr().err
    # the hint is not the command that sets shell variables without exporting them
    assert "eval" not in err
    assert ".azure/<environment>/.env" in err


def test_without_variables_it_reads_azds_environment_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, deployment: Deployment
) -> None:
    """`azd env get-values` prints KEY="value" without export: the doctor reads azd's own file instead."""
    for name in ("AZURE_SUBSCRIPTION_ID", "AZURE_RESOURCE_GROUP", "FUNCTION_APP_NAME", "AZURE_ENV_NAME"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / ".azure" / "dev").mkdir(parents=True)
    (tmp_path / ".azure" / "config.json").write_text('{"version": 1, "defaultEnvironment": "dev"}', encoding="utf-8")
    (tmp_path / ".azure" / "dev" / ".env").write_text(
        f'AZURE_ENV_NAME="dev"\nAZURE_SUBSCRIPTION_ID="{SUB}"\nAZURE_RESOURCE_GROUP="rg-haste-dev"\n'
        'FUNCTION_APP_NAME="func-haste-abc123"\nHASTE_GROUPS_CLAIM="security"\n',
        encoding="utf-8",
    )
    (tmp_path / "infra").mkdir()
    monkeypatch.chdir(tmp_path / "infra")  # found from a subfolder too
    args = build_parser().parse_args(["doctor", "--only", "app", "--output", "json"])
    out = io.StringIO()
    assert run_doctor(args, deployment.clients(), out) == 0
    assert (args.subscription, args.resource_group, args.app, args.groups_claim) == (
        SUB,
        "rg-haste-dev",
        "func-haste-abc123",
        "security",
    )


def test_a_quota_left_for_later_fails_only_without_deferred_ok(deployment: Deployment, tmp_path: Path) -> None:
    """On a fresh subscription a GPU family at zero is the operator's request, not a failed deploy."""
    account = recorded("batch_account")
    props = account["body"]["properties"]
    props["dedicatedCoreQuotaPerVMFamily"] = [
        {**family, "coreQuota": 0} if family["name"] == "standardNCASv3_T4Family" else family
        for family in props["dedicatedCoreQuotaPerVMFamily"]
    ]
    deployment.arm.add("GET", r"/batchAccounts/bahasteabc123\?", account)
    assert doctor(deployment, "--only", "batch")[0] == 1
    summary = tmp_path / "summary.md"
    code, _ = doctor(deployment, "--only", "batch", "--deferred-ok", "--summary", str(summary))
    assert code == 0
    text = summary.read_text(encoding="utf-8")
    assert "FAIL (later)" in text
    assert "1 left for the operator after the deploy" in text
    # a failure that is not deferred still fails with --deferred-ok
    deployment.arm.add("GET", r"/batchAccounts/bahasteabc123/pools\?", {**recorded("pools"), "body": {"value": []}})
    assert doctor(deployment, "--only", "batch", "--deferred-ok")[0] == 1


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
