"""An expected 404 from Batch (a node file that is gone) is one debug line, not a logged traceback."""

from __future__ import annotations

import logging

import pytest

from hastegeo.telemetry.logs import BATCH_MODEL_LOGGER, ExpectedNotFoundFilter, quiet_expected_sdk_noise
from tests.integration.azure_batch.conftest import Rig

pytestmark = pytest.mark.azurite


def _read_from_a_lost_node(rig: Rig, name: str) -> None:
    backend = rig.make()
    rig.service.faults.node_lost_after_completion(not_ready_calls=0)
    handle = backend.submit(rig.spec(name))
    rig.wait(handle)
    assert backend.read_output(handle, "outputs/x.txt").data is None


def test_the_sdk_logs_a_traceback_for_the_expected_404_unless_quieted(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    logger = logging.getLogger(BATCH_MODEL_LOGGER)
    for existing in [f for f in logger.filters if isinstance(f, ExpectedNotFoundFilter)]:
        logger.removeFilter(existing)
    caplog.set_level(logging.DEBUG, logger=BATCH_MODEL_LOGGER)
    _read_from_a_lost_node(rig, "quiet-1")
    loud = [r for r in caplog.records if r.name == BATCH_MODEL_LOGGER and r.exc_info]
    assert loud, "the SDK no longer logs this traceback: the filter may go"
    assert all(r.levelno == logging.WARNING for r in loud)

    caplog.clear()
    quiet_expected_sdk_noise()
    _read_from_a_lost_node(rig, "quiet-2")
    mine = [r for r in caplog.records if r.name == BATCH_MODEL_LOGGER]
    assert mine  # still there for whoever turns on debug logging
    assert all(r.levelno == logging.DEBUG and r.exc_info is None and r.exc_text is None for r in mine)

    caplog.clear()
    caplog.set_level(logging.INFO, logger=BATCH_MODEL_LOGGER)
    _read_from_a_lost_node(rig, "quiet-3")
    assert [r for r in caplog.records if r.name == BATCH_MODEL_LOGGER] == []
