"""Deliver queue output bindings (``@app.queue_output``) after a function succeeds.

The Functions host sends what a function set on its ``func.Out`` only when
the invocation succeeds, encoded per host.json ``messageEncoding``, creating
the queue if needed. A value may be one message or a list of messages.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from hastegeo_dev.devhost.functions import OutValue, QueueOutput
from hastegeo_dev.devhost.hostjson import MessageEncoding
from hastegeo_dev.devhost.queue_policy import encode_body
from hastegeo_dev.devhost.storage import QueueClients, resolve_connection


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
                client.send_message(encode_body(item, self._encoding))
            if self._on_sent is not None:
                self._on_sent(output.queue_name)
