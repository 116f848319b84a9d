"""Queue output sends survive a connection that fails under them (Azurite drops idle keep-alives)."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator

import pytest
from azure.core.exceptions import ServiceRequestError, ServiceResponseError
from azure.storage.queue import QueueClient

from hastegeo_dev.devhost import outputs

ACCOUNT_KEY = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="  # any key: the server reads no request


@pytest.fixture
def resetting_server() -> Iterator[tuple[int, list[int]]]:
    """A loopback port that accepts each connection and resets it at once; counts them."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    accepted: list[int] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            accepted.append(1)
            connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            connection.close()  # RST: what a client sees when it reuses a connection the server just closed

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join(timeout=2)
    server.close()


def test_a_send_whose_connection_is_reset_is_tried_again_then_fails(
    resetting_server: tuple[int, list[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    port, accepted = resetting_server
    monkeypatch.setattr(outputs, "SEND_BACKOFF_S", 0.0)
    client = QueueClient(
        f"http://127.0.0.1:{port}/devstoreaccount1",
        "jobs",
        credential={"account_name": "devstoreaccount1", "account_key": ACCOUNT_KEY},
        retry_total=0,
    )
    with pytest.raises((ServiceRequestError, ServiceResponseError)):
        outputs._send(client, "{}")
    assert outputs.SEND_ATTEMPTS > 1
    assert len(accepted) == outputs.SEND_ATTEMPTS
