"""The first hour in Azure: Graph refusals that let the deploy go on, replication retried, and images
built without ACR Tasks. The scripts run for real against a recording ``az`` (and ``docker``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.infra.stub_az import StubAz, install
from tests.infra.test_deploy_scripts import NEW_APP, posts, run

CLIENT = "33333333-3333-4333-8333-333333333333"
GROUP = "55555555-5555-4555-8555-555555555555"
GRAPH_403 = (
    'ERROR: Forbidden({"error":{"code":"Authorization_RequestDenied",'
    '"message":"Insufficient privileges to complete the operation."}})\n'
)
NOT_YET = "ERROR: Resource 'sp' does not exist or one of its queried reference-property objects are not present.\n"
TASKS_PAUSED = (
    "(TasksOperationsNotAllowed) ACR Tasks requests for the registry crhasteabc and 1234 are not permitted. "
    "Please file an Azure support request at http://aka.ms/azuresupport for assistance.\n"
)


@pytest.fixture
def az(tmp_path: Path) -> StubAz:
    return install(tmp_path / "bin")


# ---- class 3: app-only identities and the Graph permissions their calls need


def test_a_redirect_uri_graph_refuses_says_which_permission_and_is_not_retried(az: StubAz) -> None:
    az.answer(
        [
            {"match": ["ad", "app", "show", "--query", "id"], "stdout": "object-1\n"},
            {"match": ["rest", "--method", "PATCH"], "exit": 1, "stderr": GRAPH_403},
        ]
    )
    result = run("console-redirect.sh", az, CLIENT, "https://func-haste-abc.azurewebsites.net")
    assert result.returncode == 3
    assert "Application.ReadWrite.OwnedBy" in result.stderr
    assert "owning" in result.stderr.lower() or "own the app registration" in result.stderr
    assert len([c for c in az.commands() if c.startswith("rest --method PATCH")]) == 1, "a refusal is not replication"


def test_with_graph_refusal_ok_the_deploy_goes_on_and_the_summary_says_what_was_left(
    az: StubAz, tmp_path: Path
) -> None:
    az.answer(
        [
            {"match": ["ad", "app", "show", "--query", "id"], "stdout": "object-1\n"},
            {"match": ["rest", "--method", "PATCH"], "exit": 1, "stderr": GRAPH_403},
        ]
    )
    summary = tmp_path / "summary.md"
    result = run(
        "console-redirect.sh",
        az,
        CLIENT,
        "https://func-haste-abc.azurewebsites.net",
        GRAPH_REFUSAL_OK="true",
        GITHUB_ACTIONS="true",
        GITHUB_STEP_SUMMARY=str(summary),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("::warning title=console-redirect::")
    assert "Left for later" in summary.read_text(encoding="utf-8")


def test_project_groups_graph_refuses_name_the_app_role_assignment_permissions(az: StubAz) -> None:
    az.answer(
        [
            {"match": ["ad", "sp", "list"], "stdout": "sp-1\n"},
            {"match": ["rest", "--method", "POST"], "exit": 1, "stderr": GRAPH_403},
        ]
    )
    result = run("project-groups.sh", az, CLIENT, HASTE_PROJECT_GROUPS=f"{GROUP}=demo")
    assert result.returncode == 3
    assert "AppRoleAssignment.ReadWrite.All and Application.Read.All" in result.stderr
    assert "P1" not in result.stderr, "a missing permission is not a missing licence"


def test_postprovision_builds_the_images_when_graph_refuses_the_console(az: StubAz) -> None:
    az.answer(
        [
            {"match": ["ad", "app", "show", "--query", "id"], "stdout": "object-1\n"},
            {"match": ["rest", "--method", "PATCH"], "exit": 1, "stderr": GRAPH_403},
        ]
    )
    result = run(
        "postprovision.sh",
        az,
        DEPLOY_AUTH_CLIENT_ID=CLIENT,
        FUNCTION_APP_URL="https://func-haste-abc.azurewebsites.net",
        AZURE_CONTAINER_REGISTRY_NAME="crhasteabc",
    )
    assert result.returncode == 0, result.stderr
    assert "Application.ReadWrite.OwnedBy" in result.stderr
    assert [c for c in az.commands() if c.startswith("acr build")]


# ---- class 9: what is used right after it is made


def test_a_service_principal_not_replicated_yet_is_retried_and_then_assigned(az: StubAz) -> None:
    az.answer(
        [
            {"match": ["ad", "sp", "create"], "exit": 1, "stderr": NOT_YET, "times": 1},
            {"match": ["rest", "--method", "POST"], "exit": 1, "stderr": NOT_YET, "times": 1},
            *NEW_APP,
        ]
    )
    result = run("app-registration.sh", az, "--name", "haste-dev", "--admin-users", GROUP, PROPAGATION_ATTEMPTS="3")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "client-1"
    assert "may not have replicated yet; attempt 2 of 3" in result.stderr
    assert len([c for c in az.commands() if c.startswith("ad sp create")]) == 2
    assert [p["principalId"] for p in posts(az)] == [GROUP, GROUP]


def test_replication_retries_are_bounded_with_a_readable_message(az: StubAz) -> None:
    az.answer([{"match": ["ad", "sp", "create"], "exit": 1, "stderr": NOT_YET}, *NEW_APP])
    result = run("app-registration.sh", az, "--name", "haste-dev", PROPAGATION_ATTEMPTS="3")
    assert result.returncode != 0
    assert "still refused after 3 attempts" in result.stderr
    assert len([c for c in az.commands() if c.startswith("ad sp create")]) == 3


def test_a_registry_made_moments_ago_is_retried(az: StubAz) -> None:
    az.answer([{"match": ["acr", "build"], "exit": 1, "stderr": "ERROR: ResourceNotFound\n", "times": 1}])
    result = run("build-images.sh", az, "geo", AZURE_CONTAINER_REGISTRY_NAME="crhasteabc")
    assert result.returncode == 0, result.stderr
    assert len([c for c in az.commands() if c.startswith("acr build")]) == 2


def test_every_script_that_calls_right_after_a_create_goes_through_the_retry() -> None:
    scripts = Path(__file__).resolve().parents[2] / "infra" / "scripts"
    for name, calls in {
        "app-registration.sh": ("az ad sp create", "az ad app show", "--method PATCH", "--method POST"),
        "console-redirect.sh": ("az ad app show", "--method PATCH"),
        "project-groups.sh": ("--method GET", "--method POST"),
        "build-images.sh": ("az acr build", "az acr login"),
        "register-aml-environment.sh": ("az ml environment create",),
    }.items():
        # one command a line: continuation lines joined to the line they continue
        text = (scripts / name).read_text(encoding="utf-8").replace("\\\n", " ")
        for call in calls:
            lines = [line for line in text.splitlines() if call in line and not line.lstrip().startswith("#")]
            assert lines, f"{name}: no {call}"
            for line in lines:
                assert "until_propagated" in line, f"{name}: `{call}` is not retried: {line}"


# ---- class 8: subscriptions that are not enterprise ones


def test_images_fall_back_to_docker_when_acr_tasks_are_paused(az: StubAz) -> None:
    az.answer(
        [
            {"match": ["acr", "build"], "exit": 1, "stderr": TASKS_PAUSED},
            {"match": ["acr", "show"], "stdout": "crhasteabc.azurecr.io\n"},
        ]
    )
    result = run("build-images.sh", az, AZURE_CONTAINER_REGISTRY_NAME="crhasteabc", DEPLOY_IMAGE_TAG="7")
    assert result.returncode == 0, result.stderr
    assert "refuses ACR Tasks" in result.stderr
    assert az.commands("docker") == [
        "info",
        "build --file infra/docker/geo/Dockerfile --tag crhasteabc.azurecr.io/haste-geo:7 .",
        "push crhasteabc.azurecr.io/haste-geo:7",
        "info",
        "build --file infra/docker/train/Dockerfile --tag crhasteabc.azurecr.io/haste-train:7 .",
        "push crhasteabc.azurecr.io/haste-train:7",
    ]
    # once refused, the second image does not ask ACR Tasks again
    assert len([c for c in az.commands() if c.startswith("acr build")]) == 1
    assert "acr login --name crhasteabc" in az.commands()


def test_without_a_docker_engine_the_refusal_says_where_to_build(az: StubAz) -> None:
    az.answer(
        [
            {"match": ["acr", "build"], "exit": 1, "stderr": TASKS_PAUSED},
            {"tool": "docker", "match": ["info"], "exit": 1, "stderr": "Cannot connect to the Docker daemon\n"},
        ]
    )
    result = run("build-images.sh", az, "geo", AZURE_CONTAINER_REGISTRY_NAME="crhasteabc")
    assert result.returncode != 0
    assert "no Docker engine answers here" in result.stderr
    assert "DEPLOY_IMAGE_BUILDER=docker" in result.stderr


def test_the_builder_can_be_chosen(az: StubAz) -> None:
    az.answer([{"match": ["acr", "build"], "exit": 1, "stderr": TASKS_PAUSED}])
    acr_only = run("build-images.sh", az, "geo", AZURE_CONTAINER_REGISTRY_NAME="crhasteabc", DEPLOY_IMAGE_BUILDER="acr")
    assert acr_only.returncode != 0
    assert az.commands("docker") == []
    az.answer([{"match": ["acr", "show"], "stdout": "crhasteabc.azurecr.io\n"}])
    docker = run(
        "build-images.sh", az, "geo", AZURE_CONTAINER_REGISTRY_NAME="crhasteabc", DEPLOY_IMAGE_BUILDER="docker"
    )
    assert docker.returncode == 0, docker.stderr
    assert not [c for c in az.commands() if c.startswith("acr build")][1:], "docker chosen: no ACR Tasks run"
    bad = run("build-images.sh", az, AZURE_CONTAINER_REGISTRY_NAME="crhasteabc", DEPLOY_IMAGE_BUILDER="kaniko")
    assert bad.returncode == 2


# ---- what the docs tell an operator


def deploy_docs() -> str:
    return (Path(__file__).resolve().parents[2] / "docs" / "deploy.md").read_text(encoding="utf-8")


def test_azure_ml_quota_is_read_where_azure_ml_counts_it() -> None:
    text = deploy_docs()
    assert "az ml compute list-usage --location" in text
    quota = text.split("**Quotas (Azure ML).**", 1)[1].split("**Groups.**", 1)[0]
    assert "`az vm list-usage` does not show it" in quota
    assert "start at **zero**" in quota


def test_the_docs_say_which_subscriptions_need_the_docker_builder() -> None:
    section = deploy_docs().split("### Subscriptions that are not enterprise ones", 1)[1].split("\n### ", 1)[0]
    for needle in ("TasksOperationsNotAllowed", "free credits", "DEPLOY_IMAGE_BUILDER", "`auto`", "`docker`", "`acr`"):
        assert needle in section, needle


def test_the_docs_name_the_graph_permissions_the_workflow_needs() -> None:
    section = deploy_docs().split("### 3b. Or deploy with the GitHub workflows", 1)[1].split("\n### ", 1)[0]
    for needle in (
        "Application.ReadWrite.OwnedBy",
        "AppRoleAssignment.ReadWrite.All",
        "Application.Read.All",
        "consent",
    ):
        assert needle in section, needle
