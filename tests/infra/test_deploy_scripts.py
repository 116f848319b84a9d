"""The deployment scripts in infra/scripts, run for real with a recording ``az`` first on PATH."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hastegeo.auth import Role
from tests.drift.conftest import REPO
from tests.infra.stub_az import StubAz, install

SCRIPTS = REPO / "infra" / "scripts"
AZURE_CLI_APP_ID = "04b07795-8ddb-461a-bbee-02f9e1bf7b46"
READERS = "11111111-1111-1111-1111-111111111111"
ADMINS = "33333333-3333-3333-3333-333333333333"


@pytest.fixture
def az(tmp_path: Path) -> StubAz:
    return install(tmp_path / "bin")


def run(script: str, az: StubAz, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    # Propagation retries (infra/scripts/lib.sh) without waiting; a test may ask for more attempts.
    env = {"PROPAGATION_FIRST_WAIT_S": "0", "PROPAGATION_ATTEMPTS": "2", **env}
    return subprocess.run(
        ["bash", str(SCRIPTS / script), *args],
        env=az.env(**env),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("script", sorted(p.name for p in SCRIPTS.glob("*.sh")))
def test_scripts_are_valid_bash(script: str) -> None:
    subprocess.run(["bash", "-n", str(SCRIPTS / script)], check=True)


# ---- app registration


NEW_APP = [
    {"match": ["ad", "app", "list"], "stdout": ""},
    {"match": ["ad", "app", "create"], "stdout": "client-1\n"},
    {"match": ["ad", "app", "show"], "stdout": "object-1\n"},
    {"match": ["ad", "sp", "list"], "stdout": ""},
    {"match": ["ad", "sp", "create"], "stdout": "sp-1\n"},
]


def patches(az: StubAz) -> list[dict[str, Any]]:
    return [c["body"] for c in az.calls() if c["argv"][:3] == ["rest", "--method", "PATCH"]]


def posts(az: StubAz) -> list[dict[str, Any]]:
    return [c["body"] for c in az.calls() if c["argv"][:3] == ["rest", "--method", "POST"]]


def test_app_registration_from_nothing(az: StubAz) -> None:
    az.answer(NEW_APP)
    result = run("app-registration.sh", az, "--name", "haste-dev", "--readers", READERS, "--admins", ADMINS)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "client-1"
    assert "ad app create --display-name haste-dev --sign-in-audience AzureADMyOrg" in " | ".join(az.commands())
    app, preauth = patches(az)
    assert app["identifierUris"] == ["api://client-1"]
    assert {role["value"] for role in app["appRoles"]} == {role.value for role in Role}
    assert all(role["isEnabled"] and "User" in role["allowedMemberTypes"] for role in app["appRoles"])
    assert len({role["id"] for role in app["appRoles"]}) == 3
    assert app["api"]["requestedAccessTokenVersion"] == 2
    (scope,) = app["api"]["oauth2PermissionScopes"]
    assert (preauth["api"]["preAuthorizedApplications"]) == [
        {"appId": AZURE_CLI_APP_ID, "delegatedPermissionIds": [scope["id"]]}
    ]
    role_ids = {role["value"]: role["id"] for role in app["appRoles"]}
    assert sorted((p["principalId"], p["appRoleId"], p["resourceId"]) for p in posts(az)) == sorted(
        [(READERS, role_ids["Haste.Reader"], "sp-1"), (ADMINS, role_ids["Haste.Admin"], "sp-1")]
    )
    assert any(c.startswith("ad sp create --id client-1") for c in az.commands())


def test_app_registration_again_changes_nothing_it_already_has(az: StubAz) -> None:
    az.answer(NEW_APP)
    assert run("app-registration.sh", az, "--name", "haste-dev").returncode == 0
    first_patches = patches(az)
    reader_role = next(r["id"] for r in first_patches[0]["appRoles"] if r["value"] == "Haste.Reader")
    az.log.unlink()
    az.answer(
        [
            {"match": ["ad", "app", "list"], "stdout": "client-1\n"},
            {"match": ["ad", "app", "show"], "stdout": "object-1\n"},
            {"match": ["ad", "sp", "list"], "stdout": "sp-1\n"},
            {"match": ["rest", "--method", "GET"], "stdout": f"{READERS}\t{reader_role}\n"},
        ]
    )
    result = run("app-registration.sh", az, "--name", "haste-dev", "--readers", READERS, "--admins", ADMINS)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "client-1"
    commands = az.commands()
    assert not [c for c in commands if " create" in f" {c}"], commands
    assert patches(az) == first_patches, "the same definition on every run"
    assert [p["principalId"] for p in posts(az)] == [ADMINS], "the existing assignment is not sent again"
    assert "group 11111111-1111-1111-1111-111111111111 already has Haste.Reader" in result.stderr


def test_app_registration_refuses_a_group_that_is_not_an_object_id(az: StubAz) -> None:
    result = run("app-registration.sh", az, "--name", "haste-dev", "--readers", "haste-readers")
    assert result.returncode == 2
    assert "--readers must be a group object id" in result.stderr
    assert az.calls() == []
    missing = run("app-registration.sh", az)
    assert (missing.returncode, "--name is required" in missing.stderr) == (2, True)


USERS = ["44444444-4444-4444-4444-444444444444", "55555555-5555-5555-5555-555555555555"]
PROJECT_GROUP = "66666666-6666-6666-6666-666666666666"


def register(az: StubAz, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run("app-registration.sh", az, "--name", "haste-dev", *args, **env)


def test_app_registration_assigns_users_and_the_project_groups(az: StubAz) -> None:
    """Without Entra ID P1 roles go to users; the project groups must be assigned to reach the token."""
    az.answer(NEW_APP)
    groups = f"{PROJECT_GROUP}=alpha"
    result = register(az, "--readers", READERS, "--submitter-users", ",".join(USERS), HASTE_PROJECT_GROUPS=groups)
    assert result.returncode == 0, result.stderr
    reader = next(r["id"] for r in patches(az)[0]["appRoles"] if r["value"] == "Haste.Reader")
    submitter = next(r["id"] for r in patches(az)[0]["appRoles"] if r["value"] == "Haste.Submitter")
    assert [(p["principalId"], p["appRoleId"]) for p in posts(az)] == [
        (READERS, reader),
        (USERS[0], submitter),
        (USERS[1], submitter),
        (PROJECT_GROUP, reader),
    ]
    assert patches(az)[0]["groupMembershipClaims"] == "ApplicationGroup"


def test_project_groups_are_assigned_once_on_every_deploy(az: StubAz) -> None:
    from_registration = (SCRIPTS / "app-registration.sh").read_text(encoding="utf-8")
    reader = re.search(r'READER_ROLE_ID="([^"]+)"', from_registration)
    assert reader
    az.answer(
        [
            {"match": ["ad", "sp", "list"], "stdout": "sp-1\n"},
            {"match": ["rest", "--method", "GET"], "stdout": f"{READERS}\t{reader.group(1)}\n"},
        ]
    )
    groups = f"{PROJECT_GROUP}=alpha,{READERS}=beta,{PROJECT_GROUP}=alpha-again"
    result = run("project-groups.sh", az, "client-1", HASTE_PROJECT_GROUPS=groups)
    assert result.returncode == 0, result.stderr
    assert posts(az) == [{"principalId": PROJECT_GROUP, "resourceId": "sp-1", "appRoleId": reader.group(1)}]
    assert f"project group {READERS} is already assigned" in result.stderr


def many_assignments(first: str, role: str) -> str:
    """What Graph lists for an app with thousands of assignments: ``first`` holds ``role``, then users."""
    users = "".join(f"{i:08d}-0000-4000-8000-000000000000\t{role}\n" for i in range(3000))
    return f"{first}\t{role}\n{users}"


def test_an_assignment_found_among_thousands_is_not_sent_again(az: StubAz) -> None:
    """The check stops reading at its first match: the rest of the list must not turn it into a miss.

    (A pipe from printf into ``grep -q`` under pipefail did: grep left early, printf's next write
    died of SIGPIPE, the pipeline failed, and the assignment was sent again; on a short list only
    when the machine was slow enough to split the write, on a long one every time.)
    """
    reader = re.search(r'READER_ROLE_ID="([^"]+)"', (SCRIPTS / "project-groups.sh").read_text(encoding="utf-8"))
    assert reader
    listed = many_assignments(READERS, reader.group(1))
    az.answer([{"match": ["rest", "--method", "GET"], "stdout": listed}])
    result = run("project-groups.sh", az, "client-1", "sp-1", HASTE_PROJECT_GROUPS=f"{READERS}=beta")
    assert result.returncode == 0, result.stderr
    assert posts(az) == []
    assert f"project group {READERS} is already assigned" in result.stderr
    az.log.unlink()
    az.answer(
        [
            {"match": ["ad", "app", "list"], "stdout": "client-1\n"},
            {"match": ["ad", "app", "show"], "stdout": "object-1\n"},
            {"match": ["ad", "sp", "list"], "stdout": "sp-1\n"},
            {"match": ["rest", "--method", "GET"], "stdout": listed},
        ]
    )
    registered = run("app-registration.sh", az, "--name", "haste-dev", "--readers", READERS)
    assert registered.returncode == 0, registered.stderr
    assert posts(az) == []
    assert f"group {READERS} already has Haste.Reader" in registered.stderr


def test_project_groups_say_what_they_need_and_refuse_a_bad_mapping(az: StubAz) -> None:
    az.answer(
        [
            {"match": ["rest", "--method", "POST"], "exit": 1, "stderr": "ERROR: Forbidden\n"},
            {"match": ["ad", "sp", "list"], "stdout": "sp-1\n"},
        ]
    )
    refused = run("project-groups.sh", az, "client-1", HASTE_PROJECT_GROUPS=f"{PROJECT_GROUP}=alpha")
    assert refused.returncode == 1
    assert "needs Microsoft Entra ID P1 or P2" in refused.stderr
    az.log.unlink()
    assert run("project-groups.sh", az, "client-1", HASTE_PROJECT_GROUPS="alpha=group").returncode == 2
    assert run("project-groups.sh", az, "client-1", HASTE_PROJECT_GROUPS=PROJECT_GROUP).returncode == 2
    security = run(
        "project-groups.sh", az, "client-1", HASTE_PROJECT_GROUPS=f"{PROJECT_GROUP}=a", HASTE_GROUPS_CLAIM="security"
    )
    assert security.returncode == 0
    assert run("project-groups.sh", az, "client-1").returncode == 0
    assert az.calls() == [], "nothing to assign: no call"


def test_app_registration_without_entra_p1_assigns_no_group(az: StubAz) -> None:
    az.answer(NEW_APP)
    result = register(
        az, "--groups-claim", "security", "--admin-users", USERS[0], HASTE_PROJECT_GROUPS=f"{PROJECT_GROUP}=alpha"
    )
    assert result.returncode == 0, result.stderr
    assert patches(az)[0]["groupMembershipClaims"] == "SecurityGroup"
    assert [p["principalId"] for p in posts(az)] == [USERS[0]]
    refused = run("app-registration.sh", az, "--name", "haste-dev", "--groups-claim", "security", "--readers", READERS)
    assert refused.returncode == 2
    assert "assigns no group" in refused.stderr


def test_app_registration_says_what_a_refused_group_assignment_needs(az: StubAz) -> None:
    az.answer(
        [
            {"match": ["rest", "--method", "POST"], "exit": 1, "stderr": "ERROR: Forbidden\n"},
            *NEW_APP,
        ]
    )
    result = run("app-registration.sh", az, "--name", "haste-dev", "--readers", READERS)
    assert result.returncode != 0
    assert "needs Microsoft Entra ID P1 or P2" in result.stderr
    assert "--groups-claim security" in result.stderr


def test_app_registration_refuses_user_ids_that_are_not_object_ids(az: StubAz) -> None:
    result = run("app-registration.sh", az, "--name", "haste-dev", "--admin-users", f"{USERS[0]},alice@example.com")
    assert result.returncode == 2
    assert "--admin-users takes object ids" in result.stderr
    assert az.calls() == []


# ---- the console's redirect URI

NO_REDIRECTS = {"match": ["ad", "app", "show", "spa.redirectUris[]"], "stdout": ""}
CONSOLE = "https://func-haste-abc.azurewebsites.net/api/console/"


def test_console_redirect_keeps_the_registered_uris_and_adds_the_console(az: StubAz) -> None:
    az.answer(
        [
            {"match": ["ad", "app", "show", "spa.redirectUris[]"], "stdout": "http://localhost:7071/api/console/\n"},
            {"match": ["ad", "app", "show"], "stdout": "object-1\n"},
        ]
    )
    result = run("console-redirect.sh", az, "client-1", "https://func-haste-abc.azurewebsites.net")
    assert result.returncode == 0, result.stderr
    assert patches(az) == [{"spa": {"redirectUris": ["http://localhost:7071/api/console/", CONSOLE]}}]
    assert "PATCH --uri https://graph.microsoft.com/v1.0/applications/object-1" in " | ".join(az.commands())


def test_console_redirect_sends_nothing_when_the_uri_is_there(az: StubAz) -> None:
    az.answer(
        [
            {"match": ["ad", "app", "show", "spa.redirectUris[]"], "stdout": f"{CONSOLE}\n"},
            {"match": ["ad", "app", "show"], "stdout": "object-1\n"},
        ]
    )
    result = run("console-redirect.sh", az, "client-1", CONSOLE)
    assert result.returncode == 0, result.stderr
    assert patches(az) == []
    assert "already registered" in result.stderr


def test_console_redirect_refuses_a_plain_http_host_and_an_unknown_app(az: StubAz) -> None:
    assert run("console-redirect.sh", az, "client-1", "http://x.example").returncode == 2
    assert az.calls() == []
    az.answer([{"match": ["ad", "app", "show"], "stdout": ""}])
    assert run("console-redirect.sh", az, "client-9", CONSOLE).returncode == 1


def test_postprovision_registers_the_console_before_building_images(az: StubAz) -> None:
    az.answer(
        [
            NO_REDIRECTS,
            {"match": ["ad", "app", "show"], "stdout": "object-1\n"},
            {"match": ["ad", "sp", "list"], "stdout": "sp-1\n"},
        ]
    )
    result = run(
        "postprovision.sh",
        az,
        DEPLOY_AUTH_CLIENT_ID="client-1",
        FUNCTION_APP_URL="https://func-haste-abc.azurewebsites.net",
        AZURE_CONTAINER_REGISTRY_NAME="crhaste",
        AML_MODE="Disabled",
        HASTE_PROJECT_GROUPS=f"{PROJECT_GROUP}=alpha",
    )
    assert result.returncode == 0, result.stderr
    commands = az.commands()
    assert patches(az) == [{"spa": {"redirectUris": [CONSOLE]}}]
    assert [p["principalId"] for p in posts(az)] == [PROJECT_GROUP], "a project group added later is assigned"
    patch_at = next(i for i, c in enumerate(commands) if c.startswith("rest --method PATCH"))
    build_at = next(i for i, c in enumerate(commands) if c.startswith("acr build"))
    assert patch_at < build_at
    missing = run("postprovision.sh", az, AZURE_CONTAINER_REGISTRY_NAME="crhaste", AML_MODE="Disabled")
    assert missing.returncode != 0
    assert "DEPLOY_AUTH_CLIENT_ID" in missing.stderr


# ---- a role assigned in the same run: 403 is retried, within bounds


def flaky(tmp_path: Path, refusals: int, message: str = "ERROR: (403) Forbidden") -> Path:
    """A command refused ``refusals`` times with ``message``, then successful; counts its runs."""
    counter = tmp_path / "runs"
    script = tmp_path / "flaky"
    script.write_text(
        "#!/bin/sh\n"
        f'n=$(($(cat {counter} 2>/dev/null || echo 0) + 1)); echo "$n" > {counter}\n'
        f'if [ "$n" -le {refusals} ]; then echo "{message}" >&2; exit 3; fi\n'
        'echo "deployed $*"\n'
    )
    script.chmod(0o755)
    return script


def retry(az: StubAz, command: Path, *args: str, attempts: str = "4") -> subprocess.CompletedProcess[str]:
    return run("retry-on-403.sh", az, str(command), *args, RETRY_403_ATTEMPTS=attempts, RETRY_403_FIRST_WAIT_S="0")


def test_a_403_is_retried_until_the_role_has_propagated(az: StubAz, tmp_path: Path) -> None:
    result = retry(az, flaky(tmp_path, 2), "--src", "app.zip")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "deployed --src app.zip"
    assert (tmp_path / "runs").read_text().strip() == "3"
    assert result.stderr.count("refused (403)") == 2


def test_the_retries_are_bounded(az: StubAz, tmp_path: Path) -> None:
    result = retry(az, flaky(tmp_path, 99, "AuthorizationPermissionMismatch"), attempts="3")
    assert result.returncode == 3
    assert (tmp_path / "runs").read_text().strip() == "3"
    assert "still refused (403) after 3 attempts" in result.stderr


def test_any_other_failure_is_not_retried(az: StubAz, tmp_path: Path) -> None:
    result = retry(az, flaky(tmp_path, 99, "ERROR: (404) ResourceNotFound"))
    assert result.returncode == 3
    assert (tmp_path / "runs").read_text().strip() == "1"


def test_each_attempt_is_bounded_in_time(az: StubAz, tmp_path: Path) -> None:
    sleeper = tmp_path / "sleeper"
    sleeper.write_text("#!/bin/sh\nsleep 30\n")
    sleeper.chmod(0o755)
    result = run("retry-on-403.sh", az, str(sleeper), RETRY_403_RUN_TIMEOUT_S="1")
    assert result.returncode == 124
    assert "did not finish within 1s" in result.stderr


# ---- images


def test_images_build_in_the_registry_azd_names(az: StubAz) -> None:
    result = run("build-images.sh", az, AZURE_CONTAINER_REGISTRY_NAME="crhasteabc", DEPLOY_IMAGE_TAG="7")
    assert result.returncode == 0, result.stderr
    assert az.commands() == [
        f"acr build --registry crhasteabc --image haste-{image}:7 --file infra/docker/{image}/Dockerfile ."
        for image in ("geo", "train")
    ]


def test_images_find_the_registry_from_the_outputs_of_any_deployment_of_the_environment(az: StubAz) -> None:
    az.answer([{"match": ["deployment", "sub", "list"], "stdout": "crhastexyz\n"}])
    result = run("build-images.sh", az, "train", AZURE_ENV_NAME="dev")
    assert result.returncode == 0, result.stderr
    listing, build = az.calls()
    query = listing["argv"][listing["argv"].index("--query") + 1]
    assert "properties.outputs.AZURE_RESOURCE_GROUP.value=='rg-dev'" in query
    assert "properties.provisioningState=='Succeeded'" in query
    assert "haste-" not in query, "not a deployment name only one path uses"
    assert build["argv"][:4] == ["acr", "build", "--registry", "crhastexyz"]
    assert "haste-train:1" in build["argv"]


def test_images_stop_when_nothing_was_deployed(az: StubAz) -> None:
    result = run("build-images.sh", az, AZURE_ENV_NAME="dev")
    assert result.returncode == 1
    assert "no successful deployment of environment dev" in result.stderr
    assert not [c for c in az.commands() if c.startswith("acr")]


# ---- the Azure ML Environment


AML = {
    "DEPLOYED_AML_MODE": "Existing",
    "DEPLOYED_AML_SUBSCRIPTION_ID": "sub",
    "DEPLOYED_AML_RESOURCE_GROUP": "rg-ml",
    "DEPLOYED_AML_WORKSPACE": "mlw",
    "DEPLOYED_AML_ENVIRONMENT": "haste-runtime@latest",
    "DEPLOYED_AML_IMAGE": "crhasteabc.azurecr.io/haste-train:7",
    "DEPLOYED_IMAGE_TAG": "7",
}


def test_the_environment_is_registered_from_the_pushed_image_when_missing(az: StubAz) -> None:
    az.answer([{"match": ["ml", "environment", "show"], "exit": 1, "stderr": "not found"}])
    result = run("register-aml-environment.sh", az, **AML)
    assert result.returncode == 0, result.stderr
    create = az.commands()[-1]
    assert create == (
        "ml environment create --name haste-runtime --version 7 --image crhasteabc.azurecr.io/haste-train:7 "
        "--subscription sub --resource-group rg-ml --workspace-name mlw --output none"
    )


def test_an_existing_environment_is_left_alone_and_disabled_does_nothing(az: StubAz) -> None:
    result = run("register-aml-environment.sh", az, **{**AML, "DEPLOYED_AML_ENVIRONMENT": "haste-runtime:3"})
    assert result.returncode == 0, result.stderr
    assert any("ml environment show --name haste-runtime --version 3" in c for c in az.commands())
    assert not [c for c in az.commands() if c.startswith("ml environment create")]
    az.log.unlink()
    assert run("register-aml-environment.sh", az, DEPLOYED_AML_MODE="Disabled").returncode == 0
    assert az.calls() == []


# ---- azd hooks


def test_preprovision_registers_the_app_and_recovers_a_deleted_key_vault(az: StubAz) -> None:
    az.answer([*NEW_APP, {"match": ["keyvault", "list-deleted"], "stdout": "kv-haste-abc\n"}])
    result = run("preprovision.sh", az, AZURE_ENV_NAME="dev", AZURE_KEY_VAULT_NAME="kv-haste-abc")
    assert result.returncode == 0, result.stderr
    assert "ad app list --display-name haste-dev --query [0].appId --output tsv" in az.commands()
    assert az.commands("azd") == ["env set DEPLOY_AUTH_CLIENT_ID client-1"]
    assert az.commands()[-1] == "keyvault recover --name kv-haste-abc --output none"


def test_preprovision_leaves_a_configured_app_and_a_live_vault_alone(az: StubAz) -> None:
    result = run(
        "preprovision.sh", az, AZURE_ENV_NAME="dev", DEPLOY_AUTH_CLIENT_ID="client-9", AZURE_KEY_VAULT_NAME="kv-x"
    )
    assert result.returncode == 0, result.stderr
    assert [c.split(" --")[0] for c in az.commands()] == ["keyvault list-deleted"]
    assert az.commands("azd") == []


# ---- what-if


def what_if(tmp_path: Path, document: object) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "what-if.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(SCRIPTS / "check_what_if.py"), str(path)], capture_output=True, text=True, check=False
    )


def test_what_if_success_lists_the_changes(tmp_path: Path) -> None:
    result = what_if(
        tmp_path,
        {
            "status": "Succeeded",
            "error": None,
            "changes": [
                {"changeType": "Create", "resourceId": "/subscriptions/s/resourceGroups/rg-dev"},
                {"changeType": "NoChange", "resourceId": "/x"},
            ],
        },
    )
    assert result.returncode == 0, result.stdout
    assert "Create: /subscriptions/s/resourceGroups/rg-dev" in result.stdout
    assert "/x" not in result.stdout


def test_what_if_error_stops_the_deploy_with_every_message(tmp_path: Path) -> None:
    result = what_if(
        tmp_path,
        {
            "status": "Failed",
            "error": {
                "code": "InvalidTemplateDeployment",
                "message": "The template deployment is not valid.",
                "details": [{"code": "PrincipalNotFound", "message": "Principal abc does not exist."}],
            },
        },
    )
    assert result.returncode == 1
    assert "InvalidTemplateDeployment: The template deployment is not valid." in result.stdout
    assert "  PrincipalNotFound: Principal abc does not exist." in result.stdout
    assert what_if(tmp_path, {"status": "Failed"}).returncode == 1
    assert what_if(tmp_path, ["not", "a", "result"]).returncode == 2


def test_app_registration_adds_the_console_as_a_spa_redirect(az: StubAz) -> None:
    az.answer([NO_REDIRECTS, *NEW_APP])
    url = "https://func-haste-abc.azurewebsites.net/api/console/"
    result = run("app-registration.sh", az, "--name", "haste-dev", "--console-url", url)
    assert result.returncode == 0, result.stderr
    assert {"spa": {"redirectUris": [url]}} in patches(az)


def test_app_registration_refuses_a_console_url_that_is_not_https(az: StubAz) -> None:
    result = run("app-registration.sh", az, "--name", "haste-dev", "--console-url", "http://x/api/console/")
    assert result.returncode == 2
    assert "--console-url must be https://<host>/api/console/" in result.stderr
