"""Fixtures for the development host's integration tests: a host over the sample app, on the session Azurite."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from devhost_helpers import Running
from devhost_sample_app import build_app

from hastegeo_dev.devhost.azurite import Azurite
from hastegeo_dev.devhost.host import DevHost
from hastegeo_dev.devhost.hostjson import parse_host_config
from hastegeo_dev.devhost.queue_driver import DriverOptions

QUEUES = {"messageEncoding": "none", "maxPollingInterval": "00:00:00.500", "visibilityTimeout": "00:00:00"}


@pytest.fixture
def start_host(azurite: Azurite, unique: str) -> Iterator[Callable[..., Running]]:
    """Start a DevHost over a fresh sample app; ``queues`` overrides host.json ``extensions.queues``."""
    started: list[Running] = []

    def start(
        queues: dict[str, Any] | None = None,
        lease_seconds: int = 30,
        stop_grace: float = 1.0,
        before_start: Callable[[str], None] | None = None,
        rest_polling_interval: float = 0.0,
        **kwargs: Any,
    ) -> Running:
        """``before_start(prefix)`` runs before the host starts (e.g. to pre-fill ``<prefix>-work``)."""
        prefix = f"dh{unique}{len(started)}"
        app, recorder = build_app(prefix)
        if before_start is not None:
            before_start(prefix)
        config = parse_host_config({"version": "2.0", "extensions": {"queues": {**QUEUES, **(queues or {})}}})
        host = DevHost(
            app,
            host_json=config,
            environ={"AzureWebJobsStorage": azurite.connection_string},
            driver_options=DriverOptions(
                lease_seconds=lease_seconds,
                stop_grace=stop_grace,
                outage_backoff_max=0.5,
                rest_polling_interval=rest_polling_interval,
            ),
            **kwargs,
        ).start()
        running = Running(host, recorder, prefix, azurite.connection_string)
        started.append(running)
        return running

    yield start
    for running in started:
        running.host.stop()
        for client in running.clients:
            client.close()
