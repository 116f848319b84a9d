"""Helpers for the development host's integration tests: an HTTP call, a started host with its queues."""

from __future__ import annotations

import http.client
import json
from dataclasses import dataclass, field
from typing import Any

from azure.storage.queue import QueueClient
from devhost_sample_app import Recorder

from hastegeo_dev.devhost.host import DevHost


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def call(
    base_url: str, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
) -> Reply:
    """One HTTP request on a fresh connection (header names lower-cased in the reply)."""
    connection = http.client.HTTPConnection(base_url.removeprefix("http://"), timeout=10)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, response.read())
    finally:
        connection.close()


@dataclass
class Running:
    host: DevHost
    recorder: Recorder
    prefix: str
    connection_string: str
    clients: list[QueueClient] = field(default_factory=list)

    def queue(self, name: str) -> QueueClient:
        client = QueueClient.from_connection_string(self.connection_string, name)
        self.clients.append(client)
        return client

    @property
    def work(self) -> QueueClient:
        return self.queue(f"{self.prefix}-work")

    def send_work(self, key: str, **fields: Any) -> None:
        self.work.send_message(json.dumps({"key": key, **fields}))
        self.host.wake(f"{self.prefix}-work")
