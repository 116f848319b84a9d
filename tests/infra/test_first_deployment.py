"""What a first deployment emits, checked against the Bicep text (no compiler is available here).

The settings each test reads are what ``tests.infra.emitted`` evaluates from main.bicep,
main.bicepparam and appSettings.bicep, then fed to ``load_settings`` — the app's own start-up check.
"""

from __future__ import annotations

import re
from types import ModuleType

import pytest
import yaml

from hastegeo.compute.azure_ml.entities import source_description
from hastegeo.compute.azure_ml.settings import AmlSettings
from hastegeo.settings.app import PipelineSettings
from hastegeo.settings.load import load_settings
from hastegeo.store.queues import REQUESTS_QUEUE
from hastegeo.utils.errors import ConfigurationError
from hastegeo.workloads.registry import workload_names
from tests.drift.conftest import REPO, load_drift
from tests.infra.emitted import as_environment, emitted_app_settings, module_params, read

ROLE_IDS = {
    "storageBlobDataContributor": "ba92f5b4-2d11-453d-a403-e96b0029c9fe",
    "storageQueueDataMessageSender": "c6a89b2d-59bc-44d0-9896-0f6e12d7b80a",
    "storageBlobDataReader": "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1",
    "acrPull": "7f951dda-4ed3-4680-a7ca-43fe172d538d",
}


@pytest.fixture(scope="module")
def drift() -> ModuleType:
    return load_drift()


def role_assignments(text: str) -> dict[str, dict[str, str]]:
    """symbol -> {condition, scope, role, principal, type} for each role assignment in a module."""
    found = {}
    pattern = re.compile(
        r"^resource (\w+) 'Microsoft\.Authorization/roleAssignments@[^']+' = (?:if \((.*?)\) )?\{\n(.*?)^\}",
        re.MULTILINE | re.DOTALL,
    )
    for match in pattern.finditer(text):
        body = match.group(3)

        def field(name: str, body: str = body) -> str:
            value = re.search(rf"^\s+{name}: (.+)$", body, re.MULTILINE)
            return value.group(1).strip() if value else ""

        role = re.search(r"role\.(\w+)\)", field("roleDefinitionId"))
        found[match.group(1)] = {
            "condition": match.group(2) or "",
            "scope": field("scope"),
            "role": role.group(1) if role else "",
            "principal": field("principalId"),
            "type": field("principalType").strip("'"),
        }
    return found


# ---- item 3: default parameters run workloads on Azure Batch


def test_a_deployment_left_at_its_defaults_runs_every_workload_on_azure_batch(drift: ModuleType) -> None:
    settings = load_settings(as_environment(drift, emitted_app_settings(drift)))
    assert settings.routing.enabled_backends == ["azure_batch"]
    assert settings.routing.default_backend == "auto"  # auto over the enabled backends: Batch
    assert settings.backend("azure_batch").workloads(workload_names()) == frozenset(workload_names())
    assert re.search(r"^module batch 'modules/batch\.bicep' = \{", read("main.bicep"), re.MULTILINE), (
        "the Batch account and its pools exist in every deployment"
    )


def test_the_embedded_default_still_runs_locally(drift: ModuleType) -> None:
    """Only the deployment's default changed: a workstation without settings still uses the local backend."""
    assert load_settings({"AzureWebJobsStorage": "UseDevelopmentStorage=true"}).routing.enabled_backends == ["local"]
    assert drift.code_settings()["HASTE_BACKENDS_ENABLED"].deploy_default == "azure_batch"


# ---- item 2 (infra): Azure ML Create mode works with its defaults


def test_create_mode_defaults_give_every_job_an_image(drift: ModuleType) -> None:
    emitted = emitted_app_settings(drift, {"AML_MODE": "Create", "HASTE_BACKENDS_ENABLED": "azure_batch,azure_ml"})
    assert isinstance(emitted["AML_IMAGE"], drift.Opaque), "filled in from the registry, never empty"
    settings = load_settings(as_environment(drift, emitted))
    assert settings.backend("azure_ml").workloads(workload_names()) == frozenset(workload_names())
    aml = settings.section(AmlSettings)
    assert source_description(aml) == f"image:{aml.image}"  # no spec needs to name one
    main = read("main.bicep")
    assert "var amlRuntimeImage = '${registry.outputs.loginServer}/haste-train:${imageTag}'" in main
    assert module_params(main, "amlCreate")["image"] == "amlRuntimeImage", "the registered Environment is the same"


def test_an_empty_image_would_fail_every_submission() -> None:
    """The failure the resolved default prevents: the processors never set an image themselves."""
    settings = load_settings(
        {
            "AzureWebJobsStorage": "UseDevelopmentStorage=true",
            "AML_MODE": "Create",
            "AML_SUBSCRIPTION_ID": "s",
            "AML_RESOURCE_GROUP": "rg",
            "AML_WORKSPACE": "ws",
        }
    )
    with pytest.raises(ConfigurationError, match="AML_IMAGE"):
        source_description(settings.section(AmlSettings))


def test_the_operator_image_wins_and_disabled_mode_emits_none(drift: ModuleType) -> None:
    chosen = emitted_app_settings(drift, {"AML_MODE": "Create", "AML_IMAGE": "reg.example/haste:7"})
    assert chosen["AML_IMAGE"] == "reg.example/haste:7"
    assert emitted_app_settings(drift)["AML_IMAGE"] == ""


def test_the_training_image_holds_what_every_workload_needs() -> None:
    """Azure ML runs ``python -m hastegeo.workloads.<workload>`` in haste-train for all five workloads."""
    requirements = (REPO / "infra" / "docker" / "train" / "requirements.txt").read_text(encoding="utf-8")
    assert "-r ../geo/requirements.txt" in requirements
    assert "pip install --no-compile ./hastelib" in (REPO / "infra" / "docker" / "train" / "Dockerfile").read_text(
        encoding="utf-8"
    )


def test_create_mode_makes_a_datastore_for_each_container_jobs_mount(drift: ModuleType) -> None:
    workspace = read("modules/amlWorkspace.bicep")
    assert "for container in [inputsContainer, outputsContainer]: {" in workspace
    assert "name: replace(container, '-', '_')" in workspace
    assert "containerName: container" in workspace
    passed = module_params(read("main.bicep"), "amlCreate")
    assert (passed["inputsContainer"], passed["outputsContainer"]) == ("hasteInputsContainer", "hasteOutputsContainer")
    emitted = emitted_app_settings(drift, {"AML_MODE": "Create", "HASTE_BACKENDS_ENABLED": "azure_batch,azure_ml"})
    settings = load_settings(as_environment(drift, emitted))
    for container in (settings.storage.inputs_container, settings.storage.outputs_container):
        assert settings.section(AmlSettings).datastore_for(container) == container.replace("-", "_")


def test_the_workspace_identity_gets_no_role_azure_ml_assigns_itself() -> None:
    """Azure ML gives a system-assigned workspace identity its roles; assigning them again fails (ADR 0036)."""
    granted = [a for a in role_assignments(read("modules/roles.bicep")).values() if "orkspace" in a["principal"]]
    assert not granted
    roles = read("modules/roles.bicep")
    for name, guid in ROLE_IDS.items():
        assert f"{name}: '{guid}'" in roles, name


# ---- item 5: who may upload inputs and send requests


def test_a_named_group_may_upload_inputs_and_an_upstream_identity_may_send_requests() -> None:
    text = read("modules/roles.bicep")
    assignments = role_assignments(text)
    uploaders = next(a for a in assignments.values() if a["principal"] == "inputsUploaderGroupId")
    assert uploaders == {
        "condition": "!empty(inputsUploaderGroupId)",
        "scope": "inputs",
        "role": "storageBlobDataContributor",
        "principal": "inputsUploaderGroupId",
        "type": "Group",
    }
    sender = next(a for a in assignments.values() if a["principal"] == "upstreamSenderPrincipalId")
    assert sender == {
        "condition": "!empty(upstreamSenderPrincipalId)",
        "scope": "requestsQueue",
        "role": "storageQueueDataMessageSender",
        "principal": "upstreamSenderPrincipalId",
        "type": "ServicePrincipal",
    }
    assert re.search(
        rf"resource requestsQueue '[^']+/queues@[^']+' existing = \{{\n.*\n  name: '{REQUESTS_QUEUE}'", text
    )
    roles_call = module_params(read("main.bicep"), "roles")
    assert roles_call["inputsUploaderGroupId"] == "inputsUploaderGroupId"
    assert roles_call["upstreamSenderPrincipalId"] == "upstreamSenderPrincipalId"
    params = read("main.bicepparam")
    assert "readEnvironmentVariable('DEPLOY_INPUTS_UPLOADER_GROUP_ID', '')" in params
    assert "readEnvironmentVariable('DEPLOY_UPSTREAM_SENDER_PRINCIPAL_ID', '')" in params


# ---- item 4 (infra): no function key behind App Service authentication; CORS on the platform


def test_behind_app_service_authentication_no_function_key_is_asked(drift: ModuleType) -> None:
    emitted = emitted_app_settings(drift)
    assert emitted["HASTE_HTTP_AUTH_LEVEL"] == "anonymous"
    assert emitted["HASTE_AUTH_MODE"] == "app_service"
    functions = read("modules/functions.bicep")
    assert "requireAuthentication: true" in functions
    assert "unauthenticatedClientAction: 'Return401'" in functions
    keyed = emitted_app_settings(drift, {"HASTE_HTTP_AUTH_LEVEL": "function"})
    assert keyed["HASTE_HTTP_AUTH_LEVEL"] == "function", "keys stay possible for service callers"


def test_cors_is_configured_on_the_platform_from_the_setting_the_app_reads(drift: ModuleType) -> None:
    main = read("main.bicep")
    assert module_params(main, "appSettings")["hasteCorsAllowedOrigins"] == "hasteCorsAllowedOrigins"
    assert module_params(main, "functions")["corsAllowedOrigins"].startswith(
        "empty(hasteCorsAllowedOrigins) ? [] : map(split(hasteCorsAllowedOrigins, ',')"
    )
    assert "allowedOrigins: corsAllowedOrigins" in read("modules/functions.bicep")
    assert PipelineSettings.model_fields["cors_allowed_origins"].alias == "HASTE_CORS_ALLOWED_ORIGINS"
    origins = "https://ui.example.org"
    assert emitted_app_settings(drift, {"HASTE_CORS_ALLOWED_ORIGINS": origins})["HASTE_CORS_ALLOWED_ORIGINS"] == origins


# ---- teardown and redeploy: the purge-protected Key Vault name


def test_the_key_vault_name_is_stable_and_a_deleted_vault_can_be_recovered() -> None:
    main = read("main.bicep")
    assert "var token = toLower(uniqueString(subscription().id, environmentName))" in main
    assert "var keyVaultName = take('kv-haste-${token}', 24)" in main
    assert module_params(main, "keyVault")["recover"] == "keyVaultRecover == 'true'"
    vault = read("modules/keyVault.bicep")
    assert "enablePurgeProtection: true" in vault
    assert "createMode: recover ? 'recover' : 'default'" in vault
    assert "readEnvironmentVariable('DEPLOY_KEY_VAULT_RECOVER', 'false')" in read("main.bicepparam")


# ---- item 7: azd end to end


def test_outputs_the_hooks_read_never_feed_back_into_the_parameters(drift: ModuleType) -> None:
    main = read("main.bicep")
    outputs = set(re.findall(r"^output (\w+) ", main, re.MULTILINE))
    read_back = {
        "AZURE_CONTAINER_REGISTRY_NAME",
        "AZURE_RESOURCE_GROUP",
        "AZURE_KEY_VAULT_NAME",
        "DEPLOYED_IMAGE_TAG",
        "DEPLOYED_AML_MODE",
        "DEPLOYED_AML_SUBSCRIPTION_ID",
        "DEPLOYED_AML_RESOURCE_GROUP",
        "DEPLOYED_AML_WORKSPACE",
        "DEPLOYED_AML_ENVIRONMENT",
        "DEPLOYED_AML_IMAGE",
        "HASTE_API_URL",
        "HASTE_API_SCOPE",
    }
    assert read_back <= outputs, sorted(read_back - outputs)
    env_params = drift.parse_bicepparam(read("main.bicepparam"), "main.bicepparam")
    # azd writes outputs into its environment, which main.bicepparam reads: only azd's own location,
    # echoed unchanged, may be both; a resolved value under a parameter's name would stick.
    assert outputs & set(env_params) == {"AZURE_LOCATION"}


def test_azd_builds_remotely_and_runs_the_hooks() -> None:
    config = yaml.safe_load((REPO / "azure.yaml").read_text(encoding="utf-8"))
    assert config["services"]["api"]["remoteBuild"] is True
    for hook, script in (("preprovision", "preprovision.sh"), ("postprovision", "postprovision.sh")):
        run = config["hooks"][hook]["posix"]["run"]
        assert run == f"bash infra/scripts/{script}"
        assert (REPO / "infra" / "scripts" / script).is_file()
    post = (REPO / "infra" / "scripts" / "postprovision.sh").read_text(encoding="utf-8")
    assert "build-images.sh" in post
    assert "register-aml-environment.sh" in post


def test_functions_developers_get_an_example_and_their_settings_stay_out_of_git() -> None:
    example = yaml.safe_load((REPO / "local.settings.json.example").read_text(encoding="utf-8"))
    assert example["Values"]["FUNCTIONS_WORKER_RUNTIME"] == "python"
    environment = {k: v for k, v in example["Values"].items() if k != "FUNCTIONS_WORKER_RUNTIME"}
    assert load_settings(environment).routing.enabled_backends == ["local"]
    assert "local.settings.json" in (REPO / ".gitignore").read_text(encoding="utf-8").splitlines()
