"""Real Azure SDK calls against Azurite under the pipeline's sampler: a storage call is one span, without
its HTTP request's; a provider SDK's call keeps its HTTP span; calls outside a step are no trace.

The SDK's own tracing (azure-core's OpenTelemetry plugin, as ``configure_telemetry`` turns it on)
makes the spans; the sampler is the one the file and console modes install.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from azure.core import PipelineClient
from azure.core.pipeline.policies import DistributedTracingPolicy
from azure.core.rest import HttpRequest
from azure.core.settings import settings as azure_settings
from azure.core.tracing.decorator import distributed_trace
from azure.storage.blob import BlobServiceClient
from azure.storage.queue import QueueServiceClient
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import SpanKind

from hastegeo.telemetry.sampling import pipeline_sampler
from hastegeo_dev.devhost.azurite import Azurite
from tests.telemetry_support import Recording, recording

pytestmark = pytest.mark.azurite


class ProviderClient:
    """An SDK client as Batch's and Azure ML's are built: azure-core pipeline, traced methods."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._client: PipelineClient[HttpRequest, object] = PipelineClient(url, policies=[DistributedTracingPolicy()])

    @distributed_trace
    def get_job(self) -> int:
        return int(self._client.send_request(HttpRequest("GET", self._url)).status_code)  # type: ignore[attr-defined]


@contextmanager
def sdk_spans_under_pipeline_sampler() -> Iterator[Recording]:
    """Record, with the Azure SDK's tracing on and the pipeline's sampler on the process's provider."""
    with recording() as seen:
        provider = trace.get_tracer_provider()
        assert isinstance(provider, TracerProvider)
        before = provider.sampler
        provider.sampler = pipeline_sampler({})
        azure_settings.tracing_implementation = "opentelemetry"
        try:
            yield seen
        finally:
            azure_settings.tracing_implementation.unset_value()
            provider.sampler = before


def test_storage_calls_are_one_span_each_and_provider_calls_keep_their_http_span(azurite: Azurite, unique: str) -> None:
    blobs = BlobServiceClient.from_connection_string(azurite.connection_string)
    container = blobs.create_container(f"sampling-{unique}")
    queue = QueueServiceClient.from_connection_string(azurite.connection_string).create_queue(f"sampling-{unique}")
    provider_client = ProviderClient(azurite.blob_url)
    with sdk_spans_under_pipeline_sampler() as seen:
        container.upload_blob("outside.txt", b"x")  # like the development host polling its queues: no step
        tracer = trace.get_tracer_provider().get_tracer("test")
        with tracer.start_as_current_span("submit", kind=SpanKind.CONSUMER) as step:
            container.upload_blob("job.json", b"{}")
            assert container.download_blob("job.json").readall() == b"{}"
            queue.send_message("pointer")
            status = provider_client.get_job()
    assert status >= 200  # the provider-like call did reach a server

    step_id = step.get_span_context().span_id
    names = sorted(span.name for span in seen.spans)
    assert names == sorted(
        [
            "submit",
            "ContainerClient.upload_blob",
            "ContainerClient.download_blob",
            "QueueClient.send_message",
            "ProviderClient.get_job",
            "GET",
        ]
    ), names
    by_id = {span.context.span_id: span for span in seen.spans}
    for span in seen.spans:
        if span.name != "submit":
            assert span.parent is not None
            assert span.context.trace_id == step.get_span_context().trace_id
    http = [span for span in seen.spans if span.kind is SpanKind.CLIENT]
    assert len(http) == 1
    assert http[0].parent is not None
    assert by_id[http[0].parent.span_id].name == "ProviderClient.get_job"
    assert by_id[http[0].parent.span_id].parent is not None
    assert by_id[http[0].parent.span_id].parent.span_id == step_id  # type: ignore[union-attr]
    assert dict(http[0].attributes or {})["http.response.status_code"] == status
