"""Backend settings sections answer for their backend: what it cannot run, why it must not be enabled, loading."""

from __future__ import annotations

import pytest

from hastegeo.compute.azure_batch import DESCRIPTOR as BATCH
from hastegeo.compute.azure_batch.settings import BatchSettings
from hastegeo.compute.azure_ml import DESCRIPTOR as AML
from hastegeo.compute.azure_ml.settings import AmlSettings
from hastegeo.settings.fields import DEFAULT_QUEUE_LIMIT_S, BackendSection, load_section, workload_limits
from hastegeo.settings.load import load_settings
from hastegeo.utils.errors import ConfigurationError

BASE = {"AzureWebJobsStorage": "UseDevelopmentStorage=true"}


@pytest.mark.parametrize(
    ("enabled", "message"),
    [
        ("azure_ml", "azure_ml is enabled (HASTE_BACKENDS_ENABLED) but AML_MODE is Disabled"),
        ("azure_batch", "azure_batch is enabled (HASTE_BACKENDS_ENABLED) but BATCH_ACCOUNT_URL is empty"),
    ],
)
def test_enabling_a_backend_its_section_refuses_says_which_variable(enabled: str, message: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        load_settings({**BASE, "HASTE_BACKENDS_ENABLED": enabled})
    assert message in str(caught.value)


def test_the_descriptors_read_their_own_section() -> None:
    settings = load_settings(
        {
            **BASE,
            "BATCH_ACCOUNT_URL": "https://acct.westeurope.batch.azure.com",
            "BATCH_IDENTITY_RESOURCE_ID": "/subscriptions/s/identity",
            "BATCH_POOLS": "imagery=cpu",
            "BATCH_IMAGES": "imagery=img:1",
        }
    )
    assert (BATCH.settings, AML.settings) == (BatchSettings, AmlSettings)
    batch, aml = settings.backend(BATCH.name), settings.backend(AML.name)
    assert isinstance(batch, BatchSettings)
    assert isinstance(aml, AmlSettings)
    assert batch.workloads(["imagery", "training"]) == {"imagery"}
    assert batch.limits(["training"]) == {"training": "BATCH_POOLS names no pool for it"}
    assert batch.enable_problem() is None
    assert aml.limits(["imagery"]) == {"imagery": "AML_MODE is Disabled"}


def test_each_backend_owns_its_queue_limit() -> None:
    settings = load_settings({**BASE, "HASTE_AZURE_BATCH_QUEUE_LIMIT_S": "600"})
    assert settings.queue_limit_s("azure_batch") == 600
    assert settings.queue_limit_s("azure_ml") == 3600
    assert settings.queue_limit_s("local") == 3600
    assert BackendSection().queue_limit() == DEFAULT_QUEUE_LIMIT_S  # a backend that declares no limit of its own
    with pytest.raises(ConfigurationError, match="HASTE_LOCAL_QUEUE_LIMIT_S"):
        load_settings({**BASE, "HASTE_LOCAL_QUEUE_LIMIT_S": "0"})


def test_workload_limits_take_the_whole_reason_first_then_the_first_table_that_misses() -> None:
    tables = [({"a": "x", "b": "x"}, "no first"), ({"a": "y"}, "no second")]
    assert workload_limits(["a", "b", "c"], None, tables) == {"b": "no second", "c": "no first"}
    assert workload_limits(["a"], "all off", tables) == {"a": "all off"}


def test_a_section_loads_alone_treats_empty_as_unset_and_names_bad_variables() -> None:
    assert load_section(BatchSettings, {"BATCH_RETRY_ATTEMPTS": ""}).retry_attempts == 4
    with pytest.raises(ConfigurationError, match=r"^Invalid Batch settings: BATCH_RETRY_ATTEMPTS: "):
        load_section(BatchSettings, {"BATCH_RETRY_ATTEMPTS": "many"}, "Invalid Batch settings")
