"""Storage calls by operation, counted at the azure-core transport of every storage client.

``install()`` wraps :meth:`RequestsTransport.send` — the transport every blob and queue
client of this codebase sends through — so each HTTP request that leaves a process is
counted once (SDK retries included, as they cost the same), whichever client sent it.
It is a measurement instrument for the benches, never part of the app.

Other processes (the development host and its workers) count too when this folder's
``counting_site`` is on their ``PYTHONPATH`` and ``HASTE_BENCH_CALLS_DIR`` names a folder:
its ``sitecustomize`` installs the counter and each process writes its counts to
``<dir>/<pid>.json`` every half second. :func:`read_dir` adds them up.
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
            with _lock:
                COUNTS[operation(request.method, request.url)] += 1
                HOSTS[urlsplit(request.url).netloc] += 1
            return original(self, request, **kwargs)

        RequestsTransport.send = send  # type: ignore[method-assign]


def total(endpoints: Iterable[str] | None = None) -> int:
    """Requests sent so far; with ``endpoints`` (URLs), only those sent to them."""
    with _lock:
        if endpoints is None:
            return sum(COUNTS.values())
        return sum(HOSTS[urlsplit(url).netloc] for url in set(endpoints))


def snapshot() -> Counter[str]:
    with _lock:
        return Counter(COUNTS)


def write_every(folder: Path, period_s: float = 0.5) -> None:
    """Write this process's counts to ``folder/<pid>.json`` every ``period_s`` (daemon thread)."""
    target = folder / f"{os.getpid()}.json"

    def loop() -> None:
        while True:
            temporary = target.with_suffix(".tmp")
            temporary.write_text(json.dumps(snapshot()))
            temporary.replace(target)
            threading.Event().wait(period_s)

    threading.Thread(target=loop, daemon=True, name="storage-calls").start()


def read_dir(folder: Path) -> Counter[str]:
    """The counts every process wrote into ``folder``, added up."""
    found: Counter[str] = Counter()
    for path in folder.glob("*.json"):
        found.update(json.loads(path.read_text()))
    return found
