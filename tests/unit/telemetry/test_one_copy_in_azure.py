"""In Azure mode one log record leaves the process once, redacted: through Azure Monitor, not also via root.

The Functions Python worker forwards what reaches the root logger to the host, and the host
exports it again (``host.json`` ``telemetryMode: OpenTelemetry``, Microsoft's "Use OpenTelemetry
with Azure Functions"). The child process below installs the real Azure Monitor distro through
``configure_telemetry("azure")`` with its ingestion endpoint on a loopback server that counts
what it receives, and a root handler that stands for the worker's forwarding handler.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

pytest.importorskip("azure.monitor.opentelemetry")

CHILD = r"""
import logging, sys
import azure.identity

# The managed identity is not here; the exporter sends without a token to the loopback endpoint.
azure.identity.DefaultAzureCredential = lambda *a, **k: None

forwarded = []
class WorkerForwarding(logging.Handler):
    def emit(self, record):
        forwarded.append(record.getMessage())
logging.getLogger().addHandler(WorkerForwarding())

from hastegeo.telemetry.configure import configure_telemetry
configure_telemetry("azure")
logging.getLogger("hastegeo.pipeline").warning("one record %s", "only")
logging.getLogger("hastegeo.pipeline").warning("read %s", "https://a.blob.core.windows.net/c/b?sv=1&sig=SECRETSIG")
from opentelemetry._logs import get_logger_provider
get_logger_provider().force_flush()
from azure.core.settings import settings
print(settings.tracing_implementation().__name__)  # the distro installs its plugin; configure_telemetry, ours after
print(len([m for m in forwarded if m == "one record only"]))
"""


class Ingestion(BaseHTTPRequestHandler):
    received: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        envelopes = json.loads(body)
        Ingestion.received.extend(envelopes if isinstance(envelopes, list) else [envelopes])
        answer = json.dumps({"itemsReceived": len(envelopes), "itemsAccepted": len(envelopes), "errors": []})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(answer.encode())

    def log_message(self, *args: object) -> None:
        return


def test_one_log_record_leaves_the_process_once(tmp_path: Any) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Ingestion)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        endpoint = f"http://127.0.0.1:{server.server_address[1]}/"
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "TMPDIR": str(tmp_path),
            "APPLICATIONINSIGHTS_CONNECTION_STRING": (
                f"InstrumentationKey=00000000-0000-0000-0000-000000000000;IngestionEndpoint={endpoint}"
            ),
            "APPLICATIONINSIGHTS_STATSBEAT_DISABLED_ALL": "true",
            "OTEL_TRACES_SAMPLER": "always_off",
            "PYTHONPATH": ":".join(sys.path),
        }
        child = subprocess.run(
            [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=120, check=False
        )
        assert child.returncode == 0, child.stderr[-2000:]
        *_, sdk_span_plugin, forwarded = child.stdout.strip().splitlines()
        forwarded_to_the_host = int(forwarded)
    finally:
        server.shutdown()
    messages = [
        e for e in Ingestion.received if e.get("data", {}).get("baseData", {}).get("message") == "one record only"
    ]
    assert len(messages) == 1, f"Azure Monitor received {len(messages)} copies"
    sent = [e.get("data", {}).get("baseData", {}).get("message") for e in Ingestion.received]
    sent = [message for message in sent if isinstance(message, str) and message.startswith("read ")]
    assert sent == ["read https://a.blob.core.windows.net/c/b?sv=1&sig=[REDACTED]"], "a log record left unredacted"
    assert forwarded_to_the_host == 0, "the record also reached the root logger, which the worker forwards to the host"
    assert sdk_span_plugin == "SdkSpan", "the Azure SDK's spans go through the distro's plugin, not the pipeline's"
