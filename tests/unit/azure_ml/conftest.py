"""Fixtures for the Azure ML backend tests."""

from __future__ import annotations

import pytest

from hastegeo.compute.contract import ComputeJobSpec
from tests.unit.azure_ml.aml_support import make_spec


@pytest.fixture
def spec() -> ComputeJobSpec:
    return make_spec()
