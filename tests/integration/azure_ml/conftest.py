"""Fixtures for the Azure ML integration tests (the azure-ai-ml import warnings are silenced there)."""

from __future__ import annotations

import tests.unit.azure_ml.aml_support  # noqa: F401 - imports azure-ai-ml quietly, once
