"""AML settings defaults and validation, and the status mapping (pure, no SDK)."""

from __future__ import annotations

import pytest

from hastegeo.compute.azure_ml.settings import (
    AmlMode,
    AmlSettings,
    EnvironmentSource,
    load_aml_settings,
    parse_environment_reference,
)
from hastegeo.compute.azure_ml.status import ALL_STATUSES, map_status
from hastegeo.compute.contract import ComputeState
from hastegeo.utils.errors import ConfigurationError

OPTIONAL_EMPTY = {"AML_SUBSCRIPTION_ID", "AML_RESOURCE_GROUP", "AML_WORKSPACE"} | {
    "AML_IMAGE", "AML_BUILD_CONTEXT", "AML_CODE_DIR", "AML_MANAGED_IDENTITY_CLIENT_ID", "AML_DATASTORES", "AML_REGION",
    "AML_PROFILES",
}  # fmt: skip


def test_disabled_defaults_are_defined_and_non_empty() -> None:
    settings = load_aml_settings({})
    assert settings.mode is AmlMode.DISABLED
    for name, field in AmlSettings.model_fields.items():
        assert field.alias, name
        # The queue limit kept the name it had in the capacity section (documented, emitted by infra).
        assert field.alias.startswith("AML_") or field.alias == "HASTE_AZURE_ML_QUEUE_LIMIT_S", name
        assert field.description, name
        if field.alias not in OPTIONAL_EMPTY:
            assert getattr(settings, name) not in ("", {}, None), field.alias
    assert settings.identity_mode == "managed_identity"
    assert settings.environment_source is EnvironmentSource.IMAGE


def test_enabling_needs_only_mode_and_coordinates() -> None:
    settings = load_aml_settings(
        {"AML_MODE": "Existing", "AML_SUBSCRIPTION_ID": "s", "AML_RESOURCE_GROUP": "rg", "AML_WORKSPACE": "ws"}
    )
    assert settings.enabled
    assert settings.compute["training"] == "haste-gpu"
    assert settings.datastore_for("haste-outputs") == "haste_outputs"


def test_enabled_without_coordinates_names_every_missing_variable() -> None:
    with pytest.raises(ConfigurationError) as caught:
        load_aml_settings({"AML_MODE": "Existing", "AML_WORKSPACE": "ws"})
    assert "AML_SUBSCRIPTION_ID" in str(caught.value)
    assert "AML_RESOURCE_GROUP" in str(caught.value)


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"AML_ENVIRONMENT": "bare-name"}, "AML_ENVIRONMENT"),
        ({"AML_ENVIRONMENT_SOURCE": "build_context"}, "AML_BUILD_CONTEXT"),
        ({"AML_DATASTORES": "haste-outputs=bad-name"}, "AML_DATASTORES"),
        ({"AML_IDENTITY_MODE": "password"}, "AML_IDENTITY_MODE"),
    ],
)
def test_invalid_settings_name_the_variable(env: dict[str, str], needle: str) -> None:
    base = {"AML_MODE": "Existing", "AML_SUBSCRIPTION_ID": "s", "AML_RESOURCE_GROUP": "rg", "AML_WORKSPACE": "ws"}
    with pytest.raises(ConfigurationError, match=needle):
        load_aml_settings({**base, **env})


def test_environment_references() -> None:
    assert parse_environment_reference("haste-runtime:3") == ("haste-runtime", "3", None)
    assert parse_environment_reference("azureml:AzureML-sklearn-1.5@latest") == ("AzureML-sklearn-1.5", None, "latest")
    with pytest.raises(ValueError, match="name:version or name@label"):
        parse_environment_reference("haste-runtime")


@pytest.mark.parametrize(
    ("status", "state"),
    [
        ("NotStarted", ComputeState.QUEUED),
        ("Starting", ComputeState.QUEUED),
        ("Provisioning", ComputeState.QUEUED),
        ("Preparing", ComputeState.QUEUED),
        ("Queued", ComputeState.QUEUED),
        ("Running", ComputeState.RUNNING),
        ("Finalizing", ComputeState.RUNNING),
        ("CancelRequested", ComputeState.RUNNING),
        ("NotResponding", ComputeState.RUNNING),
        ("Paused", ComputeState.RUNNING),
        ("Unknown", ComputeState.RUNNING),
        ("Completed", ComputeState.SUCCEEDED),
        ("Failed", ComputeState.FAILED),
        ("Canceled", ComputeState.CANCELLED),
    ],
)
def test_every_status_is_mapped(status: str, state: ComputeState) -> None:
    mapped = map_status(status)
    assert mapped.state is state
    assert status in (mapped.detail or "")
    assert status in ALL_STATUSES


def test_status_enum_values_and_surprises() -> None:
    from azure.ai.ml._restclient.arm_ml_service.models import JobStatus  # noqa: TID251 - what job.status holds

    assert map_status(JobStatus.CANCELED).state is ComputeState.CANCELLED
    assert map_status(None).state is ComputeState.RUNNING
    assert not map_status("SomethingNew").state.terminal
    assert "not responding" in (map_status("NotResponding").detail or "")


def test_failure_reason_is_kept_and_cancel_is_never_success() -> None:
    failed = map_status("Failed", failure="UserError: exit code 2")
    assert failed.reason == "UserError: exit code 2"
    cancelled = map_status("Canceled")
    assert cancelled.state is ComputeState.CANCELLED
    assert cancelled.state is not ComputeState.SUCCEEDED
