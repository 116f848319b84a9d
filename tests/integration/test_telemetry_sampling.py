"""Real Azure SDK calls against Azurite with telemetry configured as the host does: a storage call is one
span, without its HTTP request's; a provider SDK's call keeps its HTTP span; calls outside a step are no trace;
the pipeline's leaner SDK span plugin records what azure-core's stock plugin records.

A fresh process runs ``configure_telemetry("file:...")`` (OpenTelemetry's providers are set once per
process), makes the calls, flushes, and prints what each storage request carried; the test reads the
JSON lines back as ``haste trace`` does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hastegeo.telemetry.export import read_trace
from hastegeo_dev.devhost.azurite import Azurite

pytestmark = pytest.mark.azurite

SCRIPT = """
import json, os, sys
from azure.core import PipelineClient
from azure.core.exceptions import ResourceNotFoundError
from azure.core.settings import settings
from azure.core.pipeline.policies import DistributedTracingPolicy
from azure.core.rest import HttpRequest
from azure.core.tracing.decorator import distributed_trace
from azure.storage.blob import BlobServiceClient
from hastegeo.settings.load import load_settings
from hastegeo.runtime import storage_clients
from hastegeo.telemetry.configure import configure_telemetry, flush_telemetry
from hastegeo.telemetry.tracer import step_span

otel, connection, name = sys.argv[1:4]
configure_telemetry(f"file:{otel}")
if os.environ.get("SDK_SPANS") == "stock":
    settings.tracing_implementation = "opentelemetry"  # azure-core-tracing-opentelemetry's own plugin


class ProviderClient:
    '''An SDK client as Batch's and Azure ML's are built: an azure-core pipeline, traced methods.'''

    def __init__(self, url):
        self._url = url
        self._client = PipelineClient(url, policies=[DistributedTracingPolicy()])

    @distributed_trace
    def get_job(self):
        return self._client.send_request(HttpRequest("GET", self._url)).status_code


headers = {}
def remember(response):
    headers[response.http_request.method + " " + response.http_request.url.split("?")[0].rsplit("/", 1)[-1]] = (
        "traceparent" in response.http_request.headers
    )

blobs, queues = storage_clients(load_settings({"AzureWebJobsStorage": connection}))
container = blobs.create_container(name)
queue = queues.create_queue(name)
plain = BlobServiceClient.from_connection_string(connection).get_container_client(name)  # built elsewhere
container.upload_blob("outside.txt", b"x", raw_response_hook=remember)  # no step: no trace
with step_span("submit", traceparent=None, job_id="j1"):
    container.upload_blob("job.json", b"{}", raw_response_hook=remember)
    plain.download_blob("job.json", raw_response_hook=remember).readall()
    try:
        container.download_blob("missing.json")
    except ResourceNotFoundError:
        pass
    queue.send_message("pointer")
    status = ProviderClient(blobs.url).get_job()
flush_telemetry()
print(json.dumps({"status": status, "traceparent_sent": headers, "plugin": settings.tracing_implementation().__name__}))
"""


def run_script(otel: Path, connection_string: str, name: str, sdk_spans: str = "pipeline") -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(otel), connection_string, name],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env={**os.environ, "SDK_SPANS": sdk_spans},
    )
    return json.loads(result.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_storage_calls_are_one_span_each_and_provider_calls_keep_their_http_span(
    azurite: Azurite, unique: str, tmp_path: Path
) -> None:
    otel = tmp_path / "otel.jsonl"
    printed = run_script(otel, azurite.connection_string, f"sampling-{unique}")

    spans = read_trace(otel, "j1")
    names = sorted(span["name"] for span in spans)
    expected = [
        "submit",
        "ContainerClient.upload_blob",
        "ContainerClient.download_blob",
        "ContainerClient.download_blob",
        "QueueClient.send_message",
    ]
    assert names == sorted([*expected, "ProviderClient.get_job", "GET"]), names
    assert len({span["traceId"] for span in spans}) == 1
    by_id = {span["spanId"]: span for span in spans}
    step = next(span for span in spans if span["name"] == "submit")
    for span in spans:
        if span is not step and span["name"] != "GET":
            assert span["parentSpanId"] == step["spanId"], span["name"]
    http = next(span for span in spans if span["kind"] == "CLIENT")
    assert by_id[http["parentSpanId"]]["name"] == "ProviderClient.get_job"
    assert http["attributes"]["http.response.status_code"] == printed["status"]
    # Nothing else was recorded: the call outside the step started no trace of its own.
    everything = [json.loads(line) for line in otel.read_text().splitlines()]
    assert len([entry for entry in everything if entry.get("signal") == "span"]) == len(spans)
    # The pipeline's own clients start no HTTP span at all (no traceparent header goes to storage);
    # a client built elsewhere still starts one, which the sampler drops.
    assert printed["traceparent_sent"] == {"PUT outside.txt": False, "PUT job.json": False, "GET job.json": True}


def shape(spans: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """A trace without its ids and times: each span's name, kind, parent's name, attributes, status and scope.

    A span with an error keeps the first line of its status message, the error's type and text.
    """
    names = {span["spanId"]: span["name"] for span in spans}
    return sorted(
        (
            span["name"],
            span["kind"],
            names.get(span["parentSpanId"]),
            json.dumps(span["attributes"], sort_keys=True),
            span["status"]["code"],
            (span["status"]["message"] or "").split("\n")[0],  # the rest names the request, different each time
            span["scope"],
        )
        for span in spans
    )


def test_the_pipelines_sdk_spans_are_the_stock_plugins_spans(azurite: Azurite, unique: str, tmp_path: Path) -> None:
    """``hastegeo.telemetry.sdk_spans.SdkSpan`` against azure-core-tracing-opentelemetry's plugin, call for call:
    the same spans (the failed download's error status included), parents and headers sent."""
    printed, traces = {}, {}
    for plugin in ("stock", "pipeline"):
        otel = tmp_path / f"{plugin}.jsonl"
        printed[plugin] = run_script(otel, azurite.connection_string, f"plugin-{plugin}-{unique}", plugin)
        traces[plugin] = shape(read_trace(otel, "j1"))
    assert {plugin: said.pop("plugin") for plugin, said in printed.items()} == {
        "stock": "OpenTelemetrySpan",
        "pipeline": "SdkSpan",  # what configure_telemetry installs
    }
    assert traces["pipeline"] == traces["stock"]
    assert printed["pipeline"] == printed["stock"]
    failed = [span for span in traces["stock"] if span[4] == "ERROR"]
    assert [(span[0], json.loads(span[3])["error.type"]) for span in failed] == [
        ("ContainerClient.download_blob", "azure.core.exceptions.ResourceNotFoundError")
    ]
