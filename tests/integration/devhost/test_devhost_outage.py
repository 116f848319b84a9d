"""Pollers survive a storage outage: capped retries, one log line per outage, recovery when storage returns."""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import time

import pytest
from azure.core.exceptions import ResourceExistsError
from azure.storage.queue import QueueClient
from devhost_sample_app import build_app

from hastegeo_dev.devhost.azurite import ACCOUNT_KEY, ACCOUNT_NAME, Azurite
from hastegeo_dev.devhost.host import DevHost
from hastegeo_dev.devhost.hostjson import parse_host_config
from hastegeo_dev.devhost.queue_driver import DriverOptions

pytestmark = [pytest.mark.azurite, pytest.mark.slow]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _messages(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if text in r.getMessage()]


def test_outage_is_retried_logged_once_and_recovered(caplog: pytest.LogCaptureFixture, unique: str) -> None:
    caplog.set_level(logging.INFO, logger="hastegeo_dev.devhost")
    port = _free_port()
    connection = (
        f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT_NAME};AccountKey={ACCOUNT_KEY};"
        f"QueueEndpoint=http://127.0.0.1:{port}/{ACCOUNT_NAME};"
    )
    prefix = f"dho{unique}"
    app, recorder = build_app(prefix)
    config = parse_host_config(
        {"extensions": {"queues": {"messageEncoding": "none", "maxPollingInterval": "00:00:01"}}}
    )
    host = DevHost(
        app,
        host_json=config,
        environ={"AzureWebJobsStorage": connection},
        driver_options=DriverOptions(outage_backoff_max=0.2),
        serve_http=False,
    ).start()
    emulator = Azurite(in_memory=True)
    try:
        time.sleep(1.2)  # several failed attempts per queue at <= 0.2 s apart
        outages = _messages(caplog, "storage unavailable")
        assert sorted(m.split(":")[0] for m in outages) == [f"queue {prefix}-out", f"queue {prefix}-work"]

        emulator.start(queue_port=port)
        with QueueClient.from_connection_string(connection, f"{prefix}-work") as client:
            with contextlib.suppress(ResourceExistsError):  # the recovering poller may be first
                client.create_queue()
            client.send_message(json.dumps({"key": "after-outage"}))
        host.wake(f"{prefix}-work")
        assert recorder.wait_for(lambda r: len(r.of("after-outage")) == 1, timeout=5)
        deadline = time.monotonic() + 2
        while len(_messages(caplog, "storage reachable again")) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(_messages(caplog, "storage reachable again")) == 2
        assert len(_messages(caplog, "storage unavailable")) == 2  # still one per outage
    finally:
        started = time.monotonic()
        host.stop()
        assert time.monotonic() - started < 2.0
        emulator.stop()


def test_stop_is_prompt_during_an_outage(unique: str) -> None:
    connection = (
        f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT_NAME};AccountKey={ACCOUNT_KEY};"
        f"QueueEndpoint=http://127.0.0.1:{_free_port()}/{ACCOUNT_NAME};"
    )
    app, _ = build_app(f"dhs{unique}")
    host = DevHost(app, host_json=parse_host_config({}), environ={"AzureWebJobsStorage": connection}).start()
    time.sleep(0.3)
    started = time.monotonic()
    host.stop()
    assert time.monotonic() - started < 1.0
