"""Queue clients for the development host: connection lookup, one retry owner, queue creation.

The storage SDK's default retry policy waits up to ~90 s before an error
surfaces (measured against a stopped Azurite), which would freeze pollers
and make ``stop()`` slow. Here the host is the single retry owner: clients
are built with ``retry_total=0`` and short timeouts, pollers retry with their
own capped back-off, output sends retry a failed connection briefly
(:mod:`.outputs`), and a message whose settlement fails simply comes back
when its lease expires (queue redelivery is the retry of last resort).

Connection names resolve like the Functions host does: the app setting named
by the binding's ``connection`` (default ``AzureWebJobsStorage``), falling back
to ``AzureWebJobs<name>``.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Mapping

from azure.core.exceptions import ResourceExistsError
from azure.storage.queue import QueueClient

from hastegeo.telemetry.tracer import STORAGE_CLIENT_OPTIONS
from hastegeo.utils.transport import transport_options
from hastegeo_dev.devhost.functions import DevHostError

CONNECTION_TIMEOUT = 3.0
READ_TIMEOUT = 10.0


def resolve_connection(name: str, environ: Mapping[str, str]) -> str:
    """The connection string for a binding's ``connection`` setting. Raises DevHostError if unset."""
    for key in (name, f"AzureWebJobs{name}"):
        value = environ.get(key, "").strip()
        if value:
            return value
    raise DevHostError(
        f"app setting {name!r} is not set: export it (e.g. the Azurite connection string) before starting the host"
    )


class QueueClients:
    """Cached ``QueueClient`` per (connection string, queue name); thread-safe."""

    def __init__(self, connection_timeout: float = CONNECTION_TIMEOUT, read_timeout: float = READ_TIMEOUT) -> None:
        self._connection_timeout = connection_timeout
        self._read_timeout = read_timeout
        self._clients: dict[tuple[str, str], QueueClient] = {}
        self._created: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def get(self, connection_string: str, queue_name: str) -> QueueClient:
        key = (connection_string, queue_name)
        with self._lock:
            client = self._clients.get(key)
            if client is None:
                client = QueueClient.from_connection_string(
                    connection_string,
                    queue_name,
                    retry_total=0,
                    connection_timeout=self._connection_timeout,
                    read_timeout=self._read_timeout,
                    # As the app's clients: a call is one span when traced, and azure-core builds no HTTP
                    # span only for the sampler to drop it (receive, delete and renewal of every message).
                    **STORAGE_CLIENT_OPTIONS,
                    **transport_options(os.environ),
                )
                self._clients[key] = client
            return client

    def ensure(self, connection_string: str, queue_name: str) -> QueueClient:
        """The client, after creating the queue once if it is missing. Storage errors propagate."""
        client = self.get(connection_string, queue_name)
        key = (connection_string, queue_name)
        if key not in self._created:
            with contextlib.suppress(ResourceExistsError):
                client.create_queue()
            with self._lock:
                self._created.add(key)
        return client

    def forget_created(self, connection_string: str, queue_name: str) -> None:
        """Make the next ``ensure`` create the queue again (after it was found missing)."""
        with self._lock:
            self._created.discard((connection_string, queue_name))

    def close(self) -> None:
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
            self._created.clear()
        for client in clients:
            client.close()
