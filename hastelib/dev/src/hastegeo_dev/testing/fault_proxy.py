"""A fault-injecting HTTP proxy on 127.0.0.1, for putting in front of Azurite.

Storage in Azure rarely just stops: it gets slow, answers ``500`` or ``503``, resets a
connection halfway through a response, accepts a request and never answers, or trickles
bytes. This proxy does each of those to a share of the requests that pass through it,
and can be switched on and off while a test runs (:meth:`FaultProxy.set_plan`).

It understands just enough HTTP/1.1 to work per request on kept-alive connections (and
opens a new upstream connection when the server has closed an idle one, as a client would):
a request head and its ``Content-Length`` body; a response head and its
``Content-Length`` or chunked body (none for ``HEAD``, ``1xx``, ``204`` and ``304``).
Faults, per request:

- ``delay``: hold the request for ``delay_s`` before forwarding it;
- ``error``: answer ``500`` or ``503`` (Azure's XML error body) without forwarding it,
  so the server never saw it;
- ``reset``: forward it, then cut the connection (RST) halfway through the response body:
  the server did the work, the client never learns;
- ``hang``: read it, forward nothing, answer nothing (the client's read timeout ends it);
- ``throttle``: relay the response at ``throttle_bps`` bytes a second.

Everything runs on one asyncio loop in a thread of its own; counts of injected faults
per kind are kept for the test to report, and the last requests (time, method, path, the
fault given, the status relayed) for reading after a failure (:meth:`FaultProxy.log_lines`).
Loopback only.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import struct
import threading
import time
from collections import Counter, deque
from collections.abc import Iterator
from dataclasses import dataclass

KINDS = ("delay", "error", "reset", "hang", "throttle")
_NO_BODY = (204, 304)
LOG_LIMIT = 50_000  # requests kept in the log, the oldest dropped first
_ERRORS = {500: ("InternalError", "Internal Server Error"), 503: ("ServerBusy", "Service Unavailable")}


@dataclass(frozen=True)
class FaultPlan:
    """What share of requests gets a fault (``rate``), and which faults, chosen uniformly."""

    rate: float = 0.0
    kinds: tuple[str, ...] = KINDS
    delay_s: float = 2.0
    hang_s: float = 30.0
    throttle_bps: int = 64 * 1024

    def __post_init__(self) -> None:
        unknown = set(self.kinds) - set(KINDS)
        if unknown or not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"rate must be within [0, 1] and kinds among {KINDS}; got {self.rate}, {sorted(unknown)}")


OFF = FaultPlan()


class _Cut(Exception):
    """This connection ends here (a fault cut it, or a side closed it)."""


class FaultProxy:
    """Listens on 127.0.0.1 (an OS-chosen port) and forwards to ``upstream_port`` on 127.0.0.1."""

    def __init__(self, upstream_port: int, *, seed: int = 0) -> None:
        self.upstream_port = upstream_port
        self.port = 0
        self.injected: Counter[str] = Counter()
        self.requests = 0
        self._plan = OFF
        self._rng = random.Random(seed)  # noqa: S311 - which request fails, replayable; no secret
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.Server | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._log: deque[tuple[float, str, str, str, str]] = deque(maxlen=LOG_LIMIT)

    # -- control (any thread) -------------------------------------------------------------

    def start(self) -> FaultProxy:
        self._thread = threading.Thread(target=self._run, name=f"fault-proxy-{self.upstream_port}", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the fault proxy did not start")
        return self

    def stop(self) -> None:
        if self._thread is None:
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._thread = None

    def set_plan(self, plan: FaultPlan) -> None:
        with self._lock:
            self._plan = plan

    @contextlib.contextmanager
    def faults(self, plan: FaultPlan) -> Iterator[None]:
        """Faults per ``plan`` inside the block, none after it."""
        self.set_plan(plan)
        try:
            yield
        finally:
            self.set_plan(OFF)

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def log_lines(self) -> list[str]:
        """One line per request seen (the last :data:`LOG_LIMIT`): UTC time, method, path, fault, status."""
        with self._lock:
            entries = list(self._log)
        return [
            f"{time.strftime('%H:%M:%S', time.gmtime(at))}.{int(at % 1 * 1000):03d} {method} {path} "
            f"fault={kind} -> {status}"
            for at, method, path, kind, status in entries
        ]

    def _record(self, head: bytes, kind: str | None, status: str) -> None:
        method, _, rest = head.partition(b" ")
        path = rest.partition(b" ")[0].decode("latin-1")
        with self._lock:
            self._log.append((time.time(), method.decode("latin-1"), path, kind or "-", status))

    def _choose(self) -> tuple[str | None, FaultPlan]:
        with self._lock:
            plan = self._plan
            self.requests += 1
            if plan.rate and self._rng.random() < plan.rate:
                kind = self._rng.choice(plan.kinds)
                self.injected[kind] += 1
                return kind, plan
            return None, plan

    # -- the loop -------------------------------------------------------------------------

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0))
        self.port = int(self._server.sockets[0].getsockname()[1])
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            self._server.close()
            for task in asyncio.all_tasks(self._loop):
                task.cancel()
            with contextlib.suppress(Exception):
                self._loop.run_until_complete(asyncio.sleep(0))
            self._loop.close()

    async def _serve(self, client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter) -> None:
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        try:
            while True:
                head = await _read_head(client_in)
                if head is None:
                    return
                body = await client_in.readexactly(_content_length(head))
                kind, plan = self._choose()
                if kind == "hang":
                    self._record(head, kind, "no answer")
                    await asyncio.sleep(plan.hang_s)
                    raise _Cut
                if kind == "error":
                    status = self._rng.choice(sorted(_ERRORS))
                    self._record(head, kind, str(status))
                    client_out.write(_error_response(status))
                    await client_out.drain()
                    continue
                if kind == "delay":
                    await asyncio.sleep(plan.delay_s)
                if upstream is not None and upstream[0].at_eof():
                    # The server closed this idle kept-alive connection (Azurite does after 5 s). A client
                    # talking to it directly would see that and open another; so does the proxy, or
                    # every request after a pause would fail with no fault injected.
                    upstream[1].close()
                    upstream = None
                if upstream is None:
                    upstream = await asyncio.open_connection("127.0.0.1", self.upstream_port)
                upstream[1].write(head + body)
                await upstream[1].drain()
                await self._relay(upstream[0], client_out, head, kind, plan)
        except (_Cut, ConnectionError, asyncio.IncompleteReadError, OSError):
            return
        finally:
            for writer in (client_out, upstream[1] if upstream else None):
                if writer is not None:
                    with contextlib.suppress(Exception):
                        writer.close()

    async def _relay(
        self,
        upstream: asyncio.StreamReader,
        client: asyncio.StreamWriter,
        request: bytes,
        kind: str | None,
        plan: FaultPlan,
    ) -> None:
        method = request.split(b" ", 1)[0]
        head = await _read_head(upstream)
        if head is None:
            self._record(request, kind, "upstream closed")
            raise _Cut
        status = int(head.split(b" ", 2)[1])
        self._record(request, kind, str(status) + (" (cut halfway)" if kind == "reset" else ""))
        chunked = b"transfer-encoding: chunked" in head.lower()
        if method == b"HEAD" or status in _NO_BODY or 100 <= status < 200:
            body = b""
        elif chunked:
            body = await _read_chunked(upstream)
        else:
            body = await upstream.readexactly(_content_length(head))
        payload = head + body
        if kind == "reset":
            client.write(payload[: len(head) + len(body) // 2])
            await client.drain()
            _abort(client)
            raise _Cut
        if kind == "throttle":
            step = max(1, plan.throttle_bps // 10)
            for start in range(0, len(payload), step):
                client.write(payload[start : start + step])
                await client.drain()
                await asyncio.sleep(0.1)
            return
        client.write(payload)
        await client.drain()


async def _read_head(reader: asyncio.StreamReader) -> bytes | None:
    try:
        return await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise _Cut from None
        return None


def _content_length(head: bytes) -> int:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value.strip())
    return 0


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    parts = []
    while True:
        size_line = await reader.readuntil(b"\r\n")
        size = int(size_line.split(b";", 1)[0].strip(), 16)
        chunk = await reader.readexactly(size + 2)
        parts.append(size_line + chunk)
        if size == 0:
            return b"".join(parts)


def _error_response(status: int) -> bytes:
    code, text = _ERRORS[status]
    body = (
        f'<?xml version="1.0" encoding="utf-8"?><Error><Code>{code}</Code><Message>{text} (injected)</Message></Error>'
    ).encode()
    return (
        f"HTTP/1.1 {status} {text}\r\nContent-Type: application/xml\r\nx-ms-error-code: {code}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


def _abort(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP reset (SO_LINGER 0), as a dropped connection reads on the other side."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()
