"""One job's storage calls, step by step (``python -m tests.bench.job_calls``): the budget holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from hastegeo_dev.devhost.azurite import Azurite
from tests.bench import storage_calls
from tests.bench.job_calls import one_job

pytestmark = pytest.mark.azurite


def test_one_local_job_makes_24_storage_calls_and_its_end_no_queue_call(azurite: Azurite, tmp_path: Path) -> None:
    storage_calls.install()
    calls = one_job(azurite.connection_string, tmp_path, inline_exits=True)
    assert calls.state == "succeeded"
    steps = {step: sum(counts.values()) for step, counts in calls.steps.items()}
    assert steps == {"accept": 5, "submit": 7, "end": 9, "late poll": 3}, calls.steps
    # The exit is handled where it is seen: no nudge message sent, received or deleted.
    assert not any("queue" in name for name in calls.steps["end"]), calls.steps["end"]
    # Each step reads the job document once (the trace comes from that read).
    assert calls.steps["submit"]["GET blob"] == 2  # the job and the staged input
    assert calls.steps["late poll"]["GET blob"] == 1
