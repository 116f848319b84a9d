"""Backend settings sections answer for their backend: what it cannot run, why it must not be enabled, loading."""

from __future__ import annotations

import pytest

from hastegeo.compute.azure_batch import DESCRIPTOR as BATCH
from hastegeo.compute.azure_batch.settings import BatchSettings
from hastegeo.compute.azure_ml import DESCRIPTOR as AML
from hastegeo.config import load_settings
from hastegeo.settings_base import load_section, workload_limits
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
    assert (BATCH.section, AML.section) == ("batch", "aml")
    assert BATCH.workloads(settings, ["imagery", "training"]) == {"imagery"}
    assert BATCH.limits(settings, ["training"]) == {"training": "BATCH_POOLS names no pool for it"}
    assert BATCH.enable_problem(settings) is None
    assert AML.limits(settings, ["imagery"]) == {"imagery": "AML_MODE is Disabled"}


def test_workload_limits_take_the_whole_reason_first_then_the_first_table_that_misses() -> None:
    tables = [({"a": "x", "b": "x"}, "no first"), ({"a": "y"}, "no second")]
    assert workload_limits(["a", "b", "c"], None, tables) == {"b": "no second", "c": "no first"}
    assert workload_limits(["a"], "all off", tables) == {"a": "all off"}


def test_a_section_loads_alone_treats_empty_as_unset_and_names_bad_variables() -> None:
    assert load_section(BatchSettings, {"BATCH_RETRY_ATTEMPTS": ""}).retry_attempts == 4
    with pytest.raises(ConfigurationError, match=r"^Invalid Batch settings: BATCH_RETRY_ATTEMPTS: "):
        load_section(BatchSettings, {"BATCH_RETRY_ATTEMPTS": "many"}, "Invalid Batch settings")
