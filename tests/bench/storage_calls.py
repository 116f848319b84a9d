"""Storage calls by operation, counted at the azure-core transport of every storage client.

``install()`` wraps :meth:`RequestsTransport.send` — the transport every blob and queue
client of this codebase sends through — so each HTTP request that leaves a process is
counted once (SDK retries included, as they cost the same), whichever client sent it.
It is a measurement instrument for the benches, never part of the app.

Other processes (the development host and its workers) count too when this folder's
``counting_site`` is on their ``PYTHONPATH`` and ``HASTE_BENCH_CALLS_DIR`` names a folder:
its ``sitecustomize`` installs the counter and each process writes its counts to
``<dir>/<pid>.json`` every half second. :func:`read_dir` adds them up.

Besides every call (:data:`COUNTS`), the calls that are no job's are kept apart by
source (:data:`SOURCES`): ``idle polling``, a receive that found no message (a host
polling its queues whether or not jobs run), and ``reconciler``, every call of the
development host's timer threads (``timer-*``: the reconciler's pass and its lease).
A bench subtracts them to report what the jobs themselves cost.
"""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from azure.core.pipeline.transport import RequestsTransport

COUNTS: Counter[str] = Counter()
HOSTS: Counter[str] = Counter()  # the same requests by endpoint (host:port), to tell one Azurite from another
IDLE, RECONCILER = "idle polling", "reconciler"
SOURCES: dict[str, Counter[str]] = {IDLE: Counter(), RECONCILER: Counter()}  # calls no job made, by operation
_lock = threading.Lock()
_installed = False


def operation(method: str, url: str) -> str:
    """A readable name for a storage request: method and what it acts on (pure)."""
    parts = urlsplit(url)
    params = parse_qs(parts.query)
    comp = params.get("comp", [""])[0]
    if "/messages" in parts.path:
        kind = "queue message"
    elif params.get("restype") == ["container"]:
        kind = f"container {comp}".strip()
    else:
        kind = f"blob {comp}".strip()
    return f"{method} {kind}"


def install() -> None:
    """Count every request this process sends through azure-core's requests transport (idempotent)."""
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
        original = RequestsTransport.send

        def send(self: RequestsTransport, request: Any, **kwargs: Any) -> Any:
            response = original(self, request, **kwargs)
            name, source = operation(request.method, request.url), _source(request, response, kwargs)
            with _lock:
                COUNTS[name] += 1
                HOSTS[urlsplit(request.url).netloc] += 1
                if source is not None:
                    SOURCES[source][name] += 1
            return response

        RequestsTransport.send = send  # type: ignore[method-assign]


def _source(request: Any, response: Any, kwargs: dict[str, Any]) -> str | None:
    """``reconciler`` or ``idle polling`` for a call no job made, None for a job's (reads what was received)."""
    if threading.current_thread().name.startswith("timer-"):
        return RECONCILER
    if request.method == "GET" and "/messages" in request.url and not kwargs.get("stream"):
        body = getattr(getattr(response, "internal_response", None), "content", None)
        if isinstance(body, bytes) and b"<QueueMessage>" not in body:
            return IDLE
    return None


def total(endpoints: Iterable[str] | None = None) -> int:
    """Requests sent so far; with ``endpoints`` (URLs), only those sent to them."""
    with _lock:
        if endpoints is None:
            return sum(COUNTS.values())
        return sum(HOSTS[urlsplit(url).netloc] for url in set(endpoints))


def snapshot(source: str | None = None) -> Counter[str]:
    """Every call so far by operation, or with ``source`` only those of that source."""
    with _lock:
        return Counter(COUNTS if source is None else SOURCES[source])


def write_every(folder: Path, period_s: float = 0.5) -> None:
    """Write this process's counts to ``folder/<pid>.json`` every ``period_s`` (daemon thread),
    and those of each source of calls no job made to ``folder/<pid>.<source>.json``."""
    parts = {"": None, **{f".{source.replace(' ', '-')}": source for source in SOURCES}}

    def loop() -> None:
        while True:
            for suffix, source in parts.items():
                target = folder / f"{os.getpid()}{suffix}.json"
                temporary = target.with_suffix(".tmp")
                temporary.write_text(json.dumps(snapshot(source)))
                temporary.replace(target)
            threading.Event().wait(period_s)

    threading.Thread(target=loop, daemon=True, name="storage-calls").start()


def read_dir(folder: Path, source: str | None = None) -> Counter[str]:
    """The counts every process wrote into ``folder``, added up: all calls, or those of ``source``."""
    suffix = "" if source is None else f".{source.replace(' ', '-')}"
    found: Counter[str] = Counter()
    for path in folder.glob(f"*{suffix}.json"):
        if path.name.count(".") == suffix.count(".") + 1:  # <pid>.json, or <pid>.<source>.json
            found.update(json.loads(path.read_text()))
    return found
