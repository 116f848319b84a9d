"""Deliver queue output bindings (``@app.queue_output``) after a function succeeds.

The Functions host sends what a function set on its ``func.Out`` only when
the invocation succeeds, encoded per host.json ``messageEncoding``, creating
the queue if needed. A value may be one message or a list of messages.

Like the Functions host's storage client, a send is tried again when the
connection fails under it: Azurite closes a keep-alive connection after 5 s
idle, and a send that races that close gets a reset, not an answer. A retry
may deliver a message twice, which every trigger of the app tolerates.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

from azure.core.exceptions import ServiceRequestError, ServiceResponseError
from azure.storage.queue import QueueClient

from hastegeo_dev.devhost.functions import OutValue, QueueOutput
from hastegeo_dev.devhost.hostjson import MessageEncoding
from hastegeo_dev.devhost.queue_policy import encode_body
from hastegeo_dev.devhost.storage import QueueClients, resolve_connection

SEND_ATTEMPTS = 3
SEND_BACKOFF_S = 0.05


class OutputSender:
    def __init__(
        self,
        clients: QueueClients,
        environ: Mapping[str, str],
        encoding: MessageEncoding,
        on_sent: Callable[[str], None] | None = None,
    ) -> None:
        self._clients = clients
        self._environ = environ
        self._encoding = encoding
        self._on_sent = on_sent

    def send(self, outputs: Sequence[QueueOutput], values: Mapping[str, OutValue]) -> None:
        """Send every value that was set; storage errors propagate (the invocation then fails)."""
        for output in outputs:
            out = values[output.arg_name]
            if not out.was_set or out.value is None:
                continue
            items = out.value if isinstance(out.value, list) else [out.value]
            client = self._clients.ensure(resolve_connection(output.connection, self._environ), output.queue_name)
            for item in items:
                _send(client, encode_body(item, self._encoding))
            if self._on_sent is not None:
                self._on_sent(output.queue_name)


def _send(client: QueueClient, body: str) -> None:
    """One message, tried again (briefly) when the connection, not the service, failed."""
    for attempt in range(1, SEND_ATTEMPTS + 1):
        try:
            client.send_message(body)
            return
        except (ServiceRequestError, ServiceResponseError):
            if attempt == SEND_ATTEMPTS:
                raise
            time.sleep(SEND_BACKOFF_S * attempt)
