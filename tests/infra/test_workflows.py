"""The GitHub workflows: schema-valid, clean under zizmor, OIDC-only, pinned, and doing the steps promised.

check-jsonschema validates against its vendored GitHub workflow and Dependabot
schemas (no download); zizmor runs with --offline. When a tool is not installed the
test is skipped with the reason, never failed: CI installs both from
requirements-dev.txt.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.drift.conftest import REPO

WORKFLOWS = REPO / ".github" / "workflows"
WORKFLOW_FILES = sorted(WORKFLOWS.glob("*.yml"))
DEPENDABOT = REPO / ".github" / "dependabot.yml"
BIN = Path(sys.executable).parent


def tool(name: str) -> Path:
    path = BIN / name
    if not path.exists():
        pytest.skip(f"{name} is not installed in this environment (it is pinned in requirements-dev.txt)")
    return path


def load(path: Path) -> dict[str, Any]:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(document, dict)
    return document


def steps(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [step for job in document["jobs"].values() for step in job.get("steps", [])]


def test_workflows_exist() -> None:
    assert {p.name for p in WORKFLOW_FILES} == {"ci.yml", "deploy.yml", "images.yml"}


def test_schemas_are_vendored() -> None:
    """check-jsonschema's builtin schemas ship in the package: validation needs no network."""
    pytest.importorskip("check_jsonschema")
    import check_jsonschema

    vendor = Path(check_jsonschema.__file__).parent / "builtin_schemas" / "vendor"
    assert (vendor / "github-workflows.json").is_file()
    assert (vendor / "dependabot.json").is_file()


def test_workflows_match_the_github_workflow_schema() -> None:
    checker = tool("check-jsonschema")
    result = subprocess.run(
        [str(checker), "--builtin-schema", "vendor.github-workflows", *map(str, WORKFLOW_FILES)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_dependabot_matches_its_schema() -> None:
    checker = tool("check-jsonschema")
    result = subprocess.run(
        [str(checker), "--builtin-schema", "vendor.dependabot", str(DEPENDABOT)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_zizmor_finds_nothing_offline() -> None:
    zizmor = tool("zizmor")
    result = subprocess.run(
        [str(zizmor), "--offline", "--min-severity", "low", "--no-progress", str(REPO / ".github")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: p.name)
def test_actions_are_pinned_by_commit_and_permissions_are_explicit(path: Path) -> None:
    document = load(path)
    for step in steps(document):
        if "uses" in step:
            assert re.fullmatch(r"[\w.\-]+/[\w.\-]+@[0-9a-f]{40}", step["uses"]), f"{path.name}: {step['uses']}"
        if step.get("uses", "").startswith("actions/checkout@"):
            assert step.get("with", {}).get("persist-credentials") is False
    assert document.get("permissions") == {}, f"{path.name}: default permissions must be none"
    for name, job in document["jobs"].items():
        assert "permissions" in job, f"{path.name}: job {name} must declare its permissions"


def test_deploy_signs_in_with_oidc_and_stores_no_credentials() -> None:
    text = (WORKFLOWS / "deploy.yml").read_text(encoding="utf-8")
    document = load(WORKFLOWS / "deploy.yml")
    job = document["jobs"]["deploy"]
    assert job["permissions"]["id-token"] == "write"
    assert "environment" in job, "settings come from a GitHub Environment"
    login = next(step for step in job["steps"] if step.get("uses", "").startswith("azure/login@"))
    assert set(login["with"]) == {"client-id", "tenant-id", "subscription-id"}
    assert "creds" not in text
    assert "client-secret" not in text
    assert "AZURE_CREDENTIALS" not in text


def test_deploy_runs_the_promised_steps_in_order() -> None:
    runs = [step.get("run", "") for step in steps(load(WORKFLOWS / "deploy.yml"))]
    joined = "\n".join(runs)
    order = [
        "check_drift.py",
        "az deployment sub what-if",
        "infra/scripts/check_what_if.py",
        "az deployment sub create",
        "make package",
        "az functionapp deployment source config-zip",
        "/api/health",
        "haste doctor",
    ]
    positions = [joined.find(needle) for needle in order]
    assert all(p >= 0 for p in positions), dict(zip(order, positions, strict=True))
    assert positions == sorted(positions), "drift, what-if (stop on error), deploy, build, zip deploy, smoke, doctor"
    # The doctor checks the deployment with its own extra and a machine-readable answer; its exit code fails the run.
    assert "./hastelib[doctor]" in joined
    assert "--output json" in joined[positions[-1] :]
    assert "--no-pretty-print --output json" in joined, "what-if's JSON carries its status and error"
    assert "--parameters infra/main.bicepparam" in joined
    # The zip `make package` builds, installed by the platform's remote build like every other deploy path.
    assert "--src dist/function-app.zip --build-remote true" in joined


def test_ci_runs_make_test_the_drift_check_and_the_workflow_checks() -> None:
    joined = "\n".join(step.get("run", "") for step in steps(load(WORKFLOWS / "ci.yml")))
    for needle in ("make test", "check_drift.py", "zizmor --offline", "vendor.github-workflows"):
        assert needle in joined, needle
    document: dict[Any, Any] = load(WORKFLOWS / "ci.yml")
    triggers = document[True]  # YAML 1.1 reads the key `on` as True
    assert "pull_request" in triggers
    assert "push" in triggers


def test_images_are_built_by_the_registry() -> None:
    joined = "\n".join(step.get("run", "") for step in steps(load(WORKFLOWS / "images.yml")))
    assert 'bash infra/scripts/build-images.sh "$IMAGE"' in joined, "the script azd's hook runs too"
    script = (REPO / "infra" / "scripts" / "build-images.sh").read_text(encoding="utf-8")
    assert "az acr build" in script
    assert "infra/docker/${image}/Dockerfile" in script
    assert "az deployment sub show" not in joined + script, "no deployment name only one path uses"
    # ACR Tasks first; Docker only when the registry refuses them or the operator chooses it (class 8)
    assert 'builder="${DEPLOY_IMAGE_BUILDER:-auto}"' in script
    assert "docker build" not in joined, "the workflow leaves the choice to the script"
    step = next(s for s in steps(load(WORKFLOWS / "images.yml")) if "build-images.sh" in s.get("run", ""))
    assert "vars.DEPLOY_IMAGE_BUILDER" in step["env"]["DEPLOY_IMAGE_BUILDER"]


def test_ci_compiles_and_lints_the_bicep() -> None:
    job = load(WORKFLOWS / "ci.yml")["jobs"]["bicep"]
    assert job["permissions"] == {"contents": "read"}, "no sign-in: building never calls Azure"
    joined = "\n".join(step.get("run", "") for step in job["steps"])
    for needle in (
        "az bicep build --file infra/main.bicep",
        "az bicep build-params --file infra/main.bicepparam",
        "az bicep lint --file",
        "infra/modules/*.bicep",
    ):
        assert needle in joined, needle


def test_dependabot_covers_pip_npm_and_actions() -> None:
    ecosystems = {update["package-ecosystem"] for update in load(DEPENDABOT)["updates"]}
    assert {"pip", "npm", "github-actions"} <= ecosystems


# ---- nothing waits forever, and a role that has not propagated yet is waited for


# A step that only reads the checkout or sets a variable could not run long; every other step can
# (network, Azure, builds), so each step and each job carries its own bound.
@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: p.name)
def test_every_job_and_step_has_a_timeout(path: Path) -> None:
    document = load(path)
    for job_id, job in document["jobs"].items():
        assert isinstance(job.get("timeout-minutes"), int), f"{path.name}: job {job_id} has no timeout-minutes"
        for step in job.get("steps", []):
            limit = step.get("timeout-minutes")
            assert isinstance(limit, int), f"{path.name}: {job_id} step {step.get('name')!r} has no timeout-minutes"
            assert 0 < limit <= job["timeout-minutes"], f"{path.name}: {step.get('name')!r} outlives its job"


def test_the_package_upload_retries_on_403_with_a_bound() -> None:
    """The app's storage role is assigned in this run; the publish goes through it (docs/adr/0019)."""
    document = load(WORKFLOWS / "deploy.yml")
    acting = [s for s in steps(document) if "config-zip" in s.get("run", "")]
    assert acting, "no zip deploy step"
    for step in acting:
        assert "bash infra/scripts/retry-on-403.sh az functionapp deployment source config-zip" in step["run"]


def test_the_console_redirect_uri_is_registered_once_the_app_is_shipped() -> None:
    """A Graph step the workflow's principal may be refused must not keep the first run from shipping the app."""
    document = load(WORKFLOWS / "deploy.yml")
    names = [step.get("name", "") for step in steps(document)]
    by_name = {step.get("name", ""): step for step in steps(document)}
    register = next(name for name in names if "redirect URI" in name)
    groups = next(name for name in names if "project groups" in name)
    for graph_step in (register, groups):
        assert names.index("Zip deploy") < names.index(graph_step) < names.index("Check the deployment (haste doctor)")
        # a refusal by Graph is summarised and the deploy goes on (infra/scripts/lib.sh refused_by_graph)
        assert by_name[graph_step]["env"]["GRAPH_REFUSAL_OK"] == "true"
    assert 'infra/scripts/console-redirect.sh "$DEPLOY_AUTH_CLIENT_ID" "$URL"' in by_name[register]["run"]
    assert "Application.ReadWrite.OwnedBy" in by_name[register]["run"]
    assert "AppRoleAssignment.ReadWrite.All" in by_name[groups]["run"]


def test_the_doctor_summarises_what_the_operator_does_later_instead_of_failing() -> None:
    step = next(s for s in steps(load(WORKFLOWS / "deploy.yml")) if "haste doctor" in s.get("run", ""))
    assert "--deferred-ok" in step["run"]
    assert '--summary "$GITHUB_STEP_SUMMARY"' in step["run"]
    # the deployment's own choice of group claims: the no-P1 path is not a failure
    assert '--groups-claim "$HASTE_GROUPS_CLAIM"' in step["run"]
    assert "vars.HASTE_GROUPS_CLAIM" in step["env"]["HASTE_GROUPS_CLAIM"]


def test_the_project_groups_are_assigned_on_every_deploy() -> None:
    runs = {step.get("name", ""): step.get("run", "") for step in steps(load(WORKFLOWS / "deploy.yml"))}
    assert any('infra/scripts/project-groups.sh "$DEPLOY_AUTH_CLIENT_ID"' in run for run in runs.values())
