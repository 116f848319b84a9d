"""Settings fail fast with the variable's name; defaults are defined and non-empty where required."""

from __future__ import annotations

import pytest

from hastegeo.config import load_settings
from hastegeo.utils.errors import ConfigurationError

BASE = {"AzureWebJobsStorage": "UseDevelopmentStorage=true"}


def test_defaults() -> None:
    settings = load_settings(BASE)
    assert settings.routing.enabled_backends == ["local"]
    assert settings.routing.default_backend == "auto"
    assert settings.pipeline.max_body_bytes > 0
    assert settings.backend_workloads("local") == {"imagery", "training", "inference", "embedding", "artifacts"}


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


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(ConfigurationError) as caught:
        load_settings({**BASE, "HASTE_POLL_INITIAL_S": "x", "HASTE_HISTORY_LIMIT": "1"})
    assert "HASTE_POLL_INITIAL_S" in str(caught.value)
    assert "HASTE_HISTORY_LIMIT" in str(caught.value)
