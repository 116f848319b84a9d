"""Storage clients built with ``transport_options`` read the environment once, at construction.

A proxy set after a client exists no longer reroutes its calls (so no call walks the
environment); one set before is honoured, as requests always did.
"""

from __future__ import annotations

import contextlib
import io
import os
import socket
import threading
import time
from typing import Any

import pytest
import requests
from azure.core import MatchConditions
from azure.core.exceptions import (
    ResourceModifiedError,
    ResourceNotFoundError,
    ServiceRequestError,
    ServiceResponseError,
)
from azure.storage.blob import BlobServiceClient, ExponentialRetry
from azure.storage.queue import QueueServiceClient

from hastegeo.runtime import storage_clients, transfer_client
from hastegeo.settings.load import load_settings
from hastegeo.utils.transport import DirectSession, transport_options
from hastegeo_dev.devhost.azurite import Azurite

pytestmark = pytest.mark.azurite

DEAD_PROXY = "http://127.0.0.1:9"  # the discard port: nothing listens there


@pytest.fixture
def no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in list(os.environ):
        if name.lower().endswith("_proxy"):
            monkeypatch.delenv(name)
    return monkeypatch


def _client(azurite: Azurite) -> BlobServiceClient:
    return BlobServiceClient.from_connection_string(
        azurite.connection_string, retry_total=0, connection_timeout=2, **transport_options(os.environ)
    )


def test_a_client_does_not_read_the_environment_per_call(azurite: Azurite, no_proxy_env: pytest.MonkeyPatch) -> None:
    client = _client(azurite)
    no_proxy_env.setenv("HTTP_PROXY", DEAD_PROXY)
    no_proxy_env.setenv("http_proxy", DEAD_PROXY)
    assert client.get_service_properties() is not None  # straight to Azurite, not through the dead proxy


def test_a_proxy_in_the_environment_is_still_honoured(azurite: Azurite, no_proxy_env: pytest.MonkeyPatch) -> None:
    no_proxy_env.setenv("HTTP_PROXY", DEAD_PROXY)
    no_proxy_env.setenv("http_proxy", DEAD_PROXY)
    with pytest.raises(ServiceRequestError):
        _client(azurite).get_service_properties()


def test_the_transfer_client_is_built_like_every_other(azurite: Azurite, no_proxy_env: pytest.MonkeyPatch) -> None:
    """The local backend's staging and upload client gets the same options as the pipeline's clients."""
    blobs = BlobServiceClient.from_connection_string(azurite.connection_string)
    client = transfer_client(blobs, ExponentialRetry(retry_total=0))
    no_proxy_env.setenv("HTTP_PROXY", DEAD_PROXY)
    no_proxy_env.setenv("http_proxy", DEAD_PROXY)
    assert client.get_service_properties() is not None


# -- the direct session (ADR 0018) ------------------------------------------------------


@pytest.fixture
def direct_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """requests' own merging path refuses to run: every call below went the direct way."""

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("Session.request was used")

    monkeypatch.setattr(requests.Session, "request", refused)


def _clients(azurite: Azurite, **options: Any) -> tuple[BlobServiceClient, QueueServiceClient]:
    blobs = BlobServiceClient.from_connection_string(
        azurite.connection_string, **{"retry_total": 0, **options, **transport_options({})}
    )
    queues = QueueServiceClient.from_connection_string(
        azurite.connection_string, retry_total=0, **transport_options({})
    )
    return blobs, queues


@pytest.mark.usefixtures("direct_only")
def test_every_kind_of_storage_call_works_through_the_direct_session(azurite: Azurite, unique: str) -> None:
    blobs, queues = _clients(azurite, max_single_put_size=1024 * 1024, max_block_size=1024 * 1024)
    container = blobs.create_container(f"direct-{unique}")
    written = container.get_blob_client("a.json").upload_blob(b'{"a": 1}', metadata={"state": "running"})
    assert container.download_blob("a.json").readall() == b'{"a": 1}'
    big = os.urandom(5 * 1024 * 1024 + 17)  # streamed in chunks, both ways
    container.upload_blob("big.bin", io.BytesIO(big), length=len(big))
    assert container.download_blob("big.bin", max_concurrency=2).readall() == big
    assert [blob.name for blob in container.list_blobs()] == ["a.json", "big.bin"]
    props = container.get_blob_client("a.json").get_blob_properties()
    assert (props.metadata, props.etag) == ({"state": "running"}, written["etag"])
    with pytest.raises(ResourceModifiedError):  # a conditional write that lost: 412, as ever
        container.upload_blob(
            "a.json", b"{}", overwrite=True, etag='"0x0"', match_condition=MatchConditions.IfNotModified
        )
    with pytest.raises(ResourceNotFoundError):
        container.download_blob("missing.json").readall()
    queue = queues.create_queue(f"direct-{unique}")
    queue.send_message("hello")
    [message] = list(queue.receive_messages(max_messages=1))
    queue.delete_message(message)
    assert message.content == "hello"


def _silent_server() -> tuple[socket.socket, list[socket.socket]]:
    """A loopback server that accepts connections and never answers."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                accepted.append(server.accept()[0])

    threading.Thread(target=accept, daemon=True).start()
    return server, accepted


@pytest.mark.usefixtures("direct_only")
def test_the_direct_session_keeps_the_clients_timeouts_and_error_kinds() -> None:
    server, accepted = _silent_server()
    try:
        port = server.getsockname()[1]
        silent = BlobServiceClient(
            f"http://127.0.0.1:{port}/devstoreaccount1", retry_total=0, read_timeout=1, **transport_options({})
        )
        started = time.monotonic()
        with pytest.raises(ServiceResponseError):  # a read timeout, within the client's budget
            silent.get_container_client("c").get_blob_client("b").get_blob_properties()
        assert time.monotonic() - started < 5
    finally:
        server.close()
        for connection in accepted:
            connection.close()
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    refused = BlobServiceClient(f"http://127.0.0.1:{closed}/devstoreaccount1", retry_total=0, **transport_options({}))
    with pytest.raises(ServiceRequestError):
        refused.get_service_properties()


def test_the_pipeline_clients_send_through_direct_sessions_of_their_own(
    azurite: Azurite, no_proxy_env: pytest.MonkeyPatch
) -> None:
    settings = load_settings({"AzureWebJobsStorage": azurite.connection_string})
    blobs, queues = storage_clients(settings)
    sessions = [client._pipeline._transport.session for client in (blobs, queues)]
    assert all(isinstance(session, DirectSession) for session in sessions)
    assert sessions[0] is not sessions[1]


def test_a_session_keeps_a_connection_for_each_of_many_threads() -> None:
    """24 threads calling together, five times: each keeps its connection (requests' own pool kept 10)."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Answer(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    accepted: list[object] = []

    class Counting(ThreadingHTTPServer):
        daemon_threads = True

        def get_request(self) -> tuple[socket.socket, Any]:
            request = super().get_request()
            accepted.append(request[1])
            return request

    server = Counting(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    session, threads, rounds = DirectSession(), 24, 5
    together = threading.Barrier(threads)
    answered: list[int] = []

    def calls() -> None:
        for _ in range(rounds):
            together.wait(timeout=30)
            answered.append(session.request("GET", url, allow_redirects=False, timeout=10).status_code)

    try:
        workers = [threading.Thread(target=calls) for _ in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=60)
    finally:
        server.shutdown()
        session.close()
    assert answered == [200] * threads * rounds  # every call went through (a failed one never reaches here)
    assert len(accepted) <= threads
