"""Job events to Event Grid: the real azure-core pipeline against a loopback double of the topic endpoint."""

from __future__ import annotations

import time
from typing import Any

import pytest
from azure.core.credentials import AccessToken
from azure.core.exceptions import HttpResponseError

from hastegeo.events.eventgrid import SCOPE, EventGridTopic
from hastegeo.events.publish import EventPublisher
from hastegeo.pipeline.accept import parse_request
from hastegeo_dev.testing.eventgrid_topic import EventGridTopicDouble
from tests.conftest import RuntimeFactory
from tests.support import events as event_queue

from .conftest import request


class Credential:
    """A token credential as azure-identity's behave: one token per scope, asked for by the pipeline."""

    def __init__(self) -> None:
        self.scopes: list[tuple[str, ...]] = []

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        self.scopes.append(scopes)
        return AccessToken("token-for-eventgrid", int(time.time()) + 3600)


def event(n: int) -> dict[str, Any]:
    return {"specversion": "1.0", "id": f"j.{n}", "source": "/haste-compute/projects/p", "type": "com.haste.job.queued"}


def test_a_batch_goes_out_as_the_service_expects() -> None:
    credential = Credential()
    with EventGridTopicDouble() as topic:
        EventGridTopic(topic.endpoint, credential).send([event(1), event(2)])
        assert topic.events == [event(1), event(2)]
        [sent] = topic.requests
        assert sent["query"] == "api-version=2018-01-01"
        assert sent["contentType"] == "application/cloudevents-batch+json; charset=utf-8"
        assert sent["authorization"] == "Bearer token-for-eventgrid"
    assert credential.scopes == [(SCOPE,)]


def test_an_outage_is_retried_by_the_pipeline_and_a_refusal_raises() -> None:
    with EventGridTopicDouble() as topic:
        publisher = EventGridTopic(topic.endpoint, Credential())
        topic.fail_next(503, 429)
        publisher.send([event(1)])
        assert (len(topic.requests), topic.events) == (3, [event(1)])
        with pytest.raises(HttpResponseError) as refused:
            publisher.send([{"specversion": "1.0", "id": "x"}])  # no source, no type: a 400
        assert refused.value.status_code == 400
        topic.fail_next(503, 503, 503, 503)
        with pytest.raises(HttpResponseError):
            EventGridTopic(topic.endpoint, Credential(), retry_total=2).send([event(2)])


def test_a_token_never_travels_in_clear_text_except_to_loopback() -> None:
    with pytest.raises(ValueError, match="https"):
        EventGridTopic("http://topic.example/api/events", Credential())


@pytest.mark.azurite
def test_the_job_events_reach_the_queue_and_the_topic_alike(make_runtime: RuntimeFactory) -> None:
    runtime = make_runtime()
    connection = runtime.settings.storage.connection_string
    assert connection is not None
    consumer = event_queue.events_client(connection)
    event_queue.drain(consumer)
    with EventGridTopicDouble() as topic:
        runtime.journal._publish = EventPublisher(runtime.queues, EventGridTopic(topic.endpoint, Credential()))
        job = runtime.acceptor.accept(parse_request(request(correlationId="c-1"))).job
        queued = event_queue.of_jobs(event_queue.drain(consumer), [job.id])[job.id]
        assert queued == topic.events
        assert [e["type"] for e in topic.events] == ["com.haste.job.queued"]
