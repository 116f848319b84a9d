"""The Event Grid adapter: job events to a custom topic in the CloudEvents 1.0 schema.

The only module that speaks to Event Grid. It uses azure-core's pipeline (no extra SDK):
one ``POST {endpoint}?api-version=2018-01-01`` per batch with the body a JSON array of
events (``application/cloudevents-batch+json; charset=utf-8``), authenticated with an
Entra token for ``https://eventgrid.azure.net/.default`` (the app's managed identity,
which infra gives the *EventGrid Data Sender* role on the topic). Event Grid answers
200 with an empty body; anything else raises :class:`HttpResponseError`.

azure-core's :class:`RetryPolicy` is the one retry owner: the publish is idempotent for
consumers (the events' ids are stable), so a POST is retried on 408/429/5xx like a GET.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from azure.core import PipelineClient
from azure.core.credentials import TokenCredential
from azure.core.exceptions import HttpResponseError
from azure.core.pipeline.policies import BearerTokenCredentialPolicy, HeadersPolicy, RetryPolicy, UserAgentPolicy
from azure.core.pipeline.transport import HttpTransport
from azure.core.rest import HttpRequest

API_VERSION = "2018-01-01"
SCOPE = "https://eventgrid.azure.net/.default"
CONTENT_TYPE = "application/cloudevents-batch+json; charset=utf-8"
# Event Grid takes at most 1 MB per request; the job events of one write are a few kB.
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


class EventGridTopic:
    """Publishes batches of CloudEvents (dicts in structured JSON form) to one custom topic."""

    def __init__(
        self,
        endpoint: str,
        credential: TokenCredential,
        *,
        retry_total: int = 3,
        transport: HttpTransport[Any, Any] | None = None,
    ) -> None:
        """``endpoint`` is the topic's ``https://<topic>.<region>-1.eventgrid.azure.net/api/events``.

        Plain ``http`` is accepted for a loopback address only (a test double): a token is
        never sent in clear text to anything else.
        """
        parts = urlsplit(endpoint)
        loopback = parts.hostname in _LOOPBACK
        if parts.scheme != "https" and not (parts.scheme == "http" and loopback):
            raise ValueError("the Event Grid endpoint must be an https URL")
        self._endpoint = endpoint
        self._enforce_https = not loopback
        self._client: PipelineClient[HttpRequest, Any] = PipelineClient(
            base_url=endpoint,
            policies=[
                HeadersPolicy(),
                UserAgentPolicy("haste-compute"),
                RetryPolicy(retry_total=retry_total),
                BearerTokenCredentialPolicy(credential, SCOPE),
            ],
            transport=transport,
        )

    def send(self, events: Sequence[dict[str, Any]]) -> None:
        """POST ``events`` as one batch. Raises :class:`AzureError` when refused or unreachable."""
        if not events:
            return
        request = HttpRequest(
            "POST",
            self._endpoint,
            params={"api-version": API_VERSION},
            headers={"Content-Type": CONTENT_TYPE},
            content=json.dumps(list(events), separators=(",", ":")).encode(),
        )
        # retry_on_methods is read per call: without it azure-core retries a POST only on 500/503/504.
        response = self._client.send_request(
            request, enforce_https=self._enforce_https, retry_on_methods=frozenset({"POST"})
        )
        if response.status_code != 200:
            raise HttpResponseError(response=response)

    def close(self) -> None:
        self._client.close()
