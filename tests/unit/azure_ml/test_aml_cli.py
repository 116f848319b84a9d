"""``haste aml check`` and ``haste aml create-environment`` against the stand-in (no Azure account)."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import pytest
from azure.ai.ml.entities import Environment  # noqa: TID251

from hastegeo.cli import aml
from hastegeo_dev.testing.aml_standin import StandInMLClient, http_error

BASE = {
    "AML_MODE": "Existing",
    "AML_SUBSCRIPTION_ID": "sub",
    "AML_RESOURCE_GROUP": "rg",
    "AML_WORKSPACE": "ws",
    "AML_IMAGE": "hasteacr.azurecr.io/haste/runtime:1.0",
    "AML_RETRY_DELAY_S": "0",
}


def create_env(client: StandInMLClient, **env: str) -> tuple[int, str]:
    out = io.StringIO()
    code = aml.run_create_environment(environ={**BASE, **env}, client_factory=lambda _: client, out=out)
    return code, out.getvalue()


def check(client: StandInMLClient, probe: str | None = None, **env: str) -> tuple[int, str]:
    out = io.StringIO()
    code = aml.run_check(environ={**BASE, **env}, client_factory=lambda _: client, probe=lambda _: probe, out=out)
    return code, out.getvalue()


def test_register_adds_both_subcommands() -> None:
    parser = argparse.ArgumentParser(prog="haste")
    aml.register(parser.add_subparsers(dest="command"))
    for command in ("check", "create-environment"):
        args = parser.parse_args(["aml", command])
        assert callable(args.handler)
    with pytest.raises(SystemExit):
        parser.parse_args(["aml"])


def test_create_environment_is_idempotent_and_versions_changes() -> None:
    client = StandInMLClient()
    code, text = create_env(client)
    assert code == 0
    assert "name: haste-runtime" in text
    assert "version: 1" in text
    assert "change: created" in text
    code, text = create_env(client)
    assert (code, "change: unchanged") == (0, text.splitlines()[2][: len("change: unchanged")])
    assert client.count("environments.create_or_update") == 1
    code, text = create_env(client, AML_IMAGE="hasteacr.azurecr.io/haste/runtime:2.0")
    assert code == 0
    assert "version: 2" in text
    assert "change: updated" in text
    assert "runtime:1.0" in text  # what it was
    assert client.environments.get("haste-runtime", label="latest").image.endswith("runtime:2.0")


def test_create_environment_from_a_build_context(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM python:3.11-slim\n")
    client = StandInMLClient()
    code, text = create_env(client, AML_BUILD_CONTEXT=str(tmp_path), AML_ENVIRONMENT="haste-build:3")
    assert code == 0
    assert "version: 3" in text
    stored = client.environments.get("haste-build", version="3")
    assert stored.build.path == str(tmp_path)
    assert stored.tags["haste_source"].startswith("build:")


def test_create_environment_refuses_to_change_a_pinned_version() -> None:
    client = StandInMLClient()
    client.add_environment(Environment(name="pinned", version="4", image="other:1"))
    code, text = create_env(client, AML_ENVIRONMENT="pinned:4")
    assert code == 1
    assert "AML_ENVIRONMENT=pinned:5" in text


def test_create_environment_explains_bad_or_disabled_settings() -> None:
    code, text = create_env(StandInMLClient(), AML_MODE="Disabled")
    assert code == 2
    assert "AML_MODE" in text
    code, text = create_env(StandInMLClient(), AML_ENVIRONMENT="no-version")
    assert code == 2
    assert "AML_ENVIRONMENT" in text


def test_check_all_good() -> None:
    client = StandInMLClient()
    code, text = check(client)
    assert code == 0, text
    assert "found: workspace ws" in text
    assert "found: compute haste-cpu" in text
    assert "found: compute haste-gpu" in text
    assert "ok: Azure ML is ready" in text


def test_check_reports_missing_compute_and_environment() -> None:
    client = StandInMLClient(computes=("haste-cpu",))
    code, text = check(client, AML_ENVIRONMENT_SOURCE="registered")
    assert code == 1
    assert "AML_COMPUTE" in text
    assert "missing: environment haste-runtime@latest" in text
    assert "1 problem(s) found" in text


def test_check_without_credentials_explains_what_is_missing() -> None:
    client = StandInMLClient()
    code, text = check(client, probe="AML_IDENTITY_MODE=default found no usable identity")
    assert code == 1
    assert "need credentials" in text
    assert client.calls == []


def test_check_when_disabled_says_how_to_enable() -> None:
    code, text = check(StandInMLClient(), AML_MODE="Disabled")
    assert code == 1
    assert "AML_SUBSCRIPTION_ID" in text


def test_check_names_permission_problems() -> None:
    client = StandInMLClient()
    client.fail("workspaces.get", http_error(403, "AuthorizationFailed", "no access"))
    code, text = check(client, AML_IMAGE="", AML_CODE_DIR="/nonexistent")
    assert code == 1
    assert "AML_IDENTITY_MODE" in text
    assert "problem: AML_IMAGE is empty" in text
    assert "AML_CODE_DIR" in text
