"""Settings fail fast with the variable's name; defaults are defined and non-empty where required."""

from __future__ import annotations

import pytest

from hastegeo.compute.local.settings import LocalSettings
from hastegeo.settings.fields import BackendSection
from hastegeo.settings.load import load_settings, sections
from hastegeo.utils.errors import ConfigurationError
from hastegeo.workloads.registry import workload_names

BASE = {"AzureWebJobsStorage": "UseDevelopmentStorage=true"}


def test_defaults() -> None:
    settings = load_settings(BASE)
    assert settings.routing.enabled_backends == ["local"]
    assert settings.routing.default_backend == "auto"
    assert settings.pipeline.max_body_bytes > 0
    assert settings.backend("local").workloads(workload_names()) == ALL_WORKLOADS


def test_missing_storage_names_both_variables() -> None:
    with pytest.raises(ConfigurationError, match=r"AzureWebJobsStorage .*AzureWebJobsStorage__accountName"):
        load_settings({})


def test_bad_number_names_the_variable() -> None:
    with pytest.raises(ConfigurationError, match="HASTE_POLL_INITIAL_S"):
        load_settings({**BASE, "HASTE_POLL_INITIAL_S": "soon"})


def test_unknown_backend_names_the_variable() -> None:
    with pytest.raises(ConfigurationError, match=r"HASTE_BACKENDS_ENABLED.*'foo'"):
        load_settings({**BASE, "HASTE_BACKENDS_ENABLED": "local,foo"})


def test_bad_map_syntax_names_the_variable() -> None:
    with pytest.raises(ConfigurationError, match="HASTE_BACKEND_WEIGHTS"):
        load_settings({**BASE, "HASTE_BACKEND_WEIGHTS": "local"})


def test_enabling_a_backend_needs_its_settings() -> None:
    with pytest.raises(ConfigurationError, match="BATCH_ACCOUNT_URL"):
        load_settings({**BASE, "HASTE_BACKENDS_ENABLED": "azure_batch"})
    with pytest.raises(ConfigurationError, match="AML_MODE"):
        load_settings({**BASE, "HASTE_BACKENDS_ENABLED": "azure_ml"})


def test_the_checkpoint_interval_is_seconds_above_zero_and_300_unset() -> None:
    assert load_settings(BASE).pipeline.checkpoint_interval_s == 300
    assert load_settings({**BASE, "HASTE_CHECKPOINT_INTERVAL_S": "60"}).pipeline.checkpoint_interval_s == 60
    for bad in ("0", "-5", "soon"):
        with pytest.raises(ConfigurationError, match="HASTE_CHECKPOINT_INTERVAL_S"):
            load_settings({**BASE, "HASTE_CHECKPOINT_INTERVAL_S": bad})


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(ConfigurationError) as caught:
        load_settings({**BASE, "HASTE_POLL_INITIAL_S": "x", "HASTE_HISTORY_LIMIT": "1"})
    assert "HASTE_POLL_INITIAL_S" in str(caught.value)
    assert "HASTE_HISTORY_LIMIT" in str(caught.value)


# -- where the app runs, and what each backend can take ------------------------------------

ALL_WORKLOADS = {"imagery", "training", "inference", "embedding", "artifacts"}


@pytest.mark.parametrize(
    ("platform", "expected"),
    [
        pytest.param({}, False, id="workstation"),
        pytest.param({"FUNCTIONS_WORKER_RUNTIME": "python"}, False, id="core-tools-local-settings"),
        pytest.param({"WEBSITE_SITE_NAME": "my-web-app"}, False, id="app-service-web-app"),
        pytest.param({"WEBSITE_INSTANCE_ID": "8c1f"}, True, id="app-service-instance"),
        pytest.param({"WEBSITE_SITE_NAME": "func-haste", "FUNCTIONS_WORKER_RUNTIME": "python"}, True, id="linux-flex"),
        pytest.param({"WEBSITE_INSTANCE_ID": "", "WEBSITE_SITE_NAME": ""}, False, id="empty-values"),
    ],
)
def test_azure_functions_is_detected_from_the_platform_variables(platform: dict[str, str], expected: bool) -> None:
    settings = load_settings({**BASE, **platform})
    local = settings.section(LocalSettings)
    assert local.in_azure_functions is expected
    assert (local.refusal() is not None) is expected
    assert settings.backend("local").workloads(workload_names()) == (frozenset() if expected else ALL_WORKLOADS)


def test_the_local_backend_in_azure_takes_nothing_unless_explicitly_allowed() -> None:
    in_azure = {**BASE, "WEBSITE_INSTANCE_ID": "8c1f"}
    refused = load_settings(in_azure)
    reason = refused.section(LocalSettings).refusal()
    assert reason is not None
    assert "HASTE_LOCAL_ALLOW_IN_AZURE=true" in reason
    assert set(refused.backend("local").limits(workload_names()).values()) == {reason}
    allowed = load_settings({**in_azure, "HASTE_LOCAL_ALLOW_IN_AZURE": "true"})
    assert allowed.section(LocalSettings).refusal() is None
    assert allowed.backend("local").workloads(workload_names()) == ALL_WORKLOADS
    with pytest.raises(ConfigurationError, match="HASTE_LOCAL_ALLOW_IN_AZURE"):
        load_settings({**in_azure, "HASTE_LOCAL_ALLOW_IN_AZURE": "sometimes"})


BATCH = {
    **BASE,
    "HASTE_BACKENDS_ENABLED": "azure_batch",
    "BATCH_ACCOUNT_URL": "https://acct.westeurope.batch.azure.com",
    "BATCH_IDENTITY_RESOURCE_ID": "/subscriptions/s/resourceGroups/r/providers/Microsoft.ManagedIdentity/x",
    "BATCH_POOLS": "imagery=cpu,training=gpu",
    "BATCH_IMAGES": "imagery=haste/geo:1",
}


def test_batch_takes_a_workload_only_with_a_pool_and_an_image() -> None:
    settings = load_settings(BATCH)
    assert settings.backend("azure_batch").workloads(workload_names()) == {"imagery"}
    limits = settings.backend("azure_batch").limits(workload_names())
    assert limits["training"] == "BATCH_IMAGES names no image for it"
    assert limits["artifacts"] == "BATCH_POOLS names no pool for it"
    no_identity = load_settings({**BATCH, "BATCH_IDENTITY_RESOURCE_ID": ""})
    assert no_identity.backend("azure_batch").workloads(workload_names()) == frozenset()
    assert set(no_identity.backend("azure_batch").limits(workload_names()).values()) == {
        "BATCH_IDENTITY_RESOURCE_ID is empty"
    }


AML = {
    **BASE,
    "HASTE_BACKENDS_ENABLED": "azure_ml",
    "AML_MODE": "Existing",
    "AML_SUBSCRIPTION_ID": "00000000-0000-0000-0000-000000000000",
    "AML_RESOURCE_GROUP": "rg",
    "AML_WORKSPACE": "ws",
    "AML_COMPUTE": "training=haste-gpu,artifacts=haste-cpu",
}


def test_azure_ml_with_no_image_no_registered_environment_and_no_build_context_takes_nothing() -> None:
    settings = load_settings(AML)  # image source (the default) and AML_IMAGE empty
    assert settings.backend("azure_ml").workloads(workload_names()) == frozenset()
    (reason,) = set(settings.backend("azure_ml").limits(workload_names()).values())
    assert reason.startswith("no environment to run in: AML_IMAGE is empty")
    assert "AML_ENVIRONMENT_SOURCE=registered" in reason


@pytest.mark.parametrize(
    "source",
    [
        pytest.param({"AML_IMAGE": "acr.io/haste/runtime:1"}, id="image"),
        pytest.param({"AML_ENVIRONMENT_SOURCE": "registered", "AML_ENVIRONMENT": "haste-runtime:3"}, id="registered"),
        pytest.param({"AML_ENVIRONMENT_SOURCE": "build_context", "AML_BUILD_CONTEXT": "/src/docker"}, id="build"),
    ],
)
def test_azure_ml_with_an_environment_takes_the_workloads_it_has_compute_for(source: dict[str, str]) -> None:
    settings = load_settings({**AML, **source})
    assert settings.backend("azure_ml").workloads(workload_names()) == {"training", "artifacts"}
    assert (
        settings.backend("azure_ml").limits(workload_names())["imagery"] == "AML_COMPUTE names no compute target for it"
    )


def test_a_disabled_azure_ml_takes_nothing_and_says_why() -> None:
    settings = load_settings(BASE)
    assert set(settings.backend("azure_ml").limits(workload_names()).values()) == {"AML_MODE is Disabled"}
    with pytest.raises(ConfigurationError, match="'no-such-backend' is not a backend"):
        settings.backend("no-such-backend")


def test_each_backend_section_is_its_own_by_name_and_by_type() -> None:
    settings = load_settings(BASE)
    assert list(settings.backends) == ["local", "azure_batch", "azure_ml"]  # the descriptors' order
    assert settings.section(LocalSettings) is settings.backend("local")
    with pytest.raises(ConfigurationError, match="0 backends read BackendSection"):
        settings.section(BackendSection)  # the base, which no built-in backend reads


def test_the_sections_are_the_apps_own_then_each_backends_from_its_descriptor() -> None:
    declared = sections()
    assert list(declared) == [
        *("storage", "routing", "pipeline", "auth", "capacity", "telemetry", "events", "costs"),
        *("local", "azure_batch", "azure_ml"),
    ]
    assert declared["local"] is LocalSettings
    aliases = [field.alias for model in declared.values() for field in model.model_fields.values() if field.alias]
    assert len(aliases) == len(set(aliases))  # one declaration per variable
