"""The fault proxy injects only the faults it is told to: with none, a server that closes an idle
kept-alive connection (as Azurite does after 5 s) costs the client nothing, as it would without the proxy."""

from __future__ import annotations

import asyncio
import http.client
import socket
import threading

from hastegeo_dev.testing.fault_proxy import FaultProxy


class OneAnswerServer:
    """On 127.0.0.1: answers one request per connection, then closes it (an idle keep-alive dropped)."""

    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._sock.getsockname()[1])
        self.closed = threading.Semaphore(0)  # released once per connection closed
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            with conn:
                request = b""
                while b"\r\n\r\n" not in request:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    request += chunk
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            self.closed.release()

    def stop(self) -> None:
        self._sock.close()


def test_a_server_closing_an_idle_connection_is_not_a_fault() -> None:
    server = OneAnswerServer()
    with FaultProxy(server.port) as proxy:
        client = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
        try:
            for _ in range(3):  # the client keeps its one connection to the proxy throughout
                client.request("GET", "/")
                response = client.getresponse()
                assert (response.status, response.read()) == (200, b"ok")
                assert server.closed.acquire(timeout=10)
                # Two turns of the proxy's loop: it has read the server's close before the next request.
                for _ in range(2):
                    asyncio.run_coroutine_threadsafe(asyncio.sleep(0), proxy._loop).result(10)
        finally:
            client.close()
            server.stop()
    assert proxy.injected == {}
    assert [line.split(" -> ")[1] for line in proxy.log_lines()] == ["200"] * 3
