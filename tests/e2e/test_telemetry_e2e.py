"""End to end with telemetry on: one job through the development host, one trace, counted by the metrics.

The host runs in its own process with ``HASTE_OTEL_EXPORT=file:...``; the test reads the JSON lines
it wrote, as ``haste trace`` does, and runs that command too.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from azure.storage.blob import BlobServiceClient

from hastegeo.cli.client import ApiClient
from hastegeo.telemetry.export import latest_metrics, read_trace
from hastegeo_dev.stack import LocalStack

pytestmark = [pytest.mark.azurite, pytest.mark.slow]
TERMINAL = {"succeeded", "failed", "cancelled"}


def _eventually(check: Callable[[], Any], timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(0.3)


def _total(points: list[dict[str, Any]], **attributes: str) -> float:
    return sum(p.get("value", p.get("count", 0)) for p in points if attributes.items() <= p["attributes"].items())


def test_one_job_is_one_trace_with_every_step_and_is_counted(tmp_path: Path) -> None:
    otel = tmp_path / "otel.jsonl"
    settings = {
        "HASTE_LOCAL_SLOTS": "1",
        "HASTE_POLL_INITIAL_S": "1",
        "HASTE_POLL_MAX_S": "2",
        "HASTE_OTEL_EXPORT": f"file:{otel}",
    }
    with LocalStack(tmp_path / "stack", settings=settings, lease_seconds=3) as stack:
        blobs = BlobServiceClient.from_connection_string(stack.azurite.connection_string)
        blobs.get_container_client("haste-inputs").upload_blob("p1/small.txt", b"small input")
        client = ApiClient(stack.base_url)
        job = client.submit({"workload": "artifacts", "projectId": "p1", "inputs": [{"blob": "p1/small.txt"}]})
        final = _eventually(lambda: (j := client.get(job["id"]))["state"] in TERMINAL and j, timeout=90)
        assert final, "the job did not end"
        assert final["state"] == "succeeded"

        def whole_trace() -> list[dict[str, Any]]:
            spans = read_trace(otel, job["id"])
            return spans if any(s["name"] == "postprocess" for s in spans) else []

        spans = _eventually(whole_trace)
    # Metrics are written every OTEL_METRIC_EXPORT_INTERVAL (60 s unset) and once more by each process
    # as it stops: the totals are in the file once the stack has stopped.
    metrics = latest_metrics(otel)

    names = [span["name"] for span in spans]
    assert {"POST /api/jobs", "submit", "postprocess"} <= set(names), names
    assert "poll" in names or "nudge" in names, names
    assert len({span["traceId"] for span in spans}) == 1  # one trace for the whole job
    ids = {span["spanId"] for span in spans}
    root = [span for span in spans if span["parentSpanId"] not in ids]
    assert [span["name"] for span in root] == ["POST /api/jobs"]  # every other span hangs below the request
    ours = [span for span in spans if span["scope"] == "hastegeo"]
    for span in ours:
        attributes = span["attributes"]
        assert attributes["haste.job_id"] == job["id"], span["name"]
        assert attributes["haste.project"] == "p1", span["name"]
        assert attributes["haste.workload"] == "artifacts", span["name"]
        assert attributes["haste.backend"] == "local", span["name"]
    submit = next(span for span in ours if span["name"] == "submit")
    assert submit["attributes"]["haste.attempt"] == 1
    # The storage calls made by the steps are child spans from the Azure SDK's own tracing.
    assert any(span["scope"] != "hastegeo" and span["parentSpanId"] in ids for span in spans)

    labels = {"backend": "local", "workload": "artifacts"}
    assert _total(metrics["haste.jobs.accepted"], **labels) == 1
    assert _total(metrics["haste.jobs.started"], **labels) == 1
    assert _total(metrics["haste.jobs.succeeded"], **labels) == 1
    assert "haste.jobs.failed" not in metrics
    for histogram in ("haste.job.queue_wait", "haste.job.run_time", "haste.job.postprocess_time", "haste.job.polls"):
        assert _total(metrics[histogram], **labels) == 1, histogram  # one observation: this job

    shown = subprocess.run(
        [sys.executable, "-m", "hastegeo.cli.main", "trace", job["id"], "--file", str(otel), "-o", "table"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert shown.splitlines()[0].startswith("POST /api/jobs")
    assert "  submit" in shown
    assert "postprocess" in shown
