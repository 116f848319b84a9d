"""One job's storage calls, step by step (``python -m tests.bench.job_calls``): the budget holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from hastegeo_dev.devhost.azurite import Azurite
from tests.bench import storage_calls
from tests.bench.job_calls import one_job

pytestmark = pytest.mark.azurite


def test_one_local_job_makes_26_storage_calls(azurite: Azurite, tmp_path: Path) -> None:
    storage_calls.install()
    calls = one_job(azurite.connection_string, tmp_path, inline_exits=True)
    assert calls.state == "succeeded"
    steps = {step: sum(counts.values()) for step, counts in calls.steps.items()}
    # The end's cost rides in its ending write (no call of its own); its project's running totals get a
    # marker that also stands for the active entry's delete (one call for both): the reconciler's pass adds
    # it to the month's document and retires the job (docs/adr/0042, docs/adr/0051).
    assert steps == {"accept": 6, "submit": 9, "end": 11, "late poll": 0}, calls.steps
    # Each step that stores state changes publishes one event per change and then records that it did
    # (ADR 0024): accept 1 event, submit 2 (submitting, running), end 2 (post-processing, succeeded).
    # The end records it with its totals marker, which it writes anyway: no second write.
    assert {step: counts["POST queue message"] for step, counts in calls.steps.items() if step != "late poll"} == {
        "accept": 2,
        "submit": 3,
        "end": 2,
    }
    # A new idempotency key is stored without a read first (a conditional create).
    assert calls.steps["accept"]["GET blob"] == 0
    # One document write per step, and one that records its events were published: submit stores the
    # handle only; the end stores the move to post-processing with the success (ADR 0016).
    assert calls.steps["submit"]["PUT blob"] == 2
    # The end: its ended entry, the document, the workload's three outputs (the uploader's, in this process)
    # and its totals marker; no delete (its active entry goes with the marker, in the reconciler's pass).
    assert (calls.steps["end"]["PUT blob"], calls.steps["end"]["DELETE blob"]) == (6, 0)
    # The exit is handled where it is seen (no nudge message), and the chain's pending
    # message is deleted instead of arriving after the end: one queue call beside the two events.
    assert {name: n for name, n in calls.steps["end"].items() if "queue" in name} == {
        "DELETE queue message": 1,
        "POST queue message": 2,
    }
    # Each step reads the job document once (the trace comes from that read).
    assert calls.steps["submit"]["GET blob"] == 2  # the job and the staged input
    assert calls.steps["end"]["GET blob"] == 2  # the job and the output the manifest lists
