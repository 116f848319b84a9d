"""``python -m hastegeo_dev.devhost``: run the Functions app locally until Ctrl-C / SIGTERM.

Stands in for ``func start`` (Core Tools cannot be installed here). It does
not start storage: start Azurite first and export the app settings. From a
shell, with Azurite on its default ports (10000 blob, 10001 queue)::

    npx azurite --skipApiVersionCheck --disableTelemetry --inMemoryPersistence &
    export AzureWebJobsStorage=UseDevelopmentStorage=true
    python -m hastegeo_dev.devhost --app function_app:app --port 7071 --host-json host.json

From Python (ports picked by the OS), use ``hastegeo_dev.devhost.azurite.Azurite``
and ``hastegeo_dev.devhost.host.DevHost`` together; see the ``host`` module.

It prints the base URL (``http://127.0.0.1:7071``) on stdout once serving,
logs to stderr, and stops gracefully on SIGINT / SIGTERM.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

from hastegeo_dev.devhost.functions import DevHostError
from hastegeo_dev.devhost.host import DevHost
from hastegeo_dev.devhost.hostjson import HostJsonError
from hastegeo_dev.devhost.http_server import DEFAULT_BODY_TIMEOUT_S, DEFAULT_MAX_BODY_BYTES
from hastegeo_dev.devhost.queue_driver import DriverOptions
from hastegeo_dev.devhost.workers import (
    STANDBY_REST_POLLING_S,
    QueueWorkers,
    listen_for_wakes,
    run_below_the_host,
    worker_command,
)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m hastegeo_dev.devhost", description=__doc__.splitlines()[0])
    parser.add_argument("--app", default="function_app:app", help="module:attribute of the FunctionApp")
    parser.add_argument("--app-dir", default=".", help="directory put first on sys.path (the app's root)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback only)")
    parser.add_argument("--port", type=int, default=7071, help="HTTP port; 0 picks a free one")
    parser.add_argument("--host-json", default=None, help="host.json path (default: <app-dir>/host.json if present)")
    parser.add_argument("--cors-origin", action="append", default=[], help="allowed CORS origin (repeat; '*' = any)")
    parser.add_argument("--max-body-bytes", type=int, default=DEFAULT_MAX_BODY_BYTES)
    parser.add_argument(
        "--body-timeout-s",
        type=float,
        default=DEFAULT_BODY_TIMEOUT_S,
        help="longest pause while a request body arrives before the answer is 408",
    )
    parser.add_argument("--lease-seconds", type=int, default=DriverOptions.lease_seconds)
    parser.add_argument("--log-level", default="INFO")
    parser.add_argument(
        "--worker-processes",
        type=int,
        default=int(os.environ.get("FUNCTIONS_WORKER_PROCESS_COUNT", "1") or "1"),
        help="processes running the queue triggers, like FUNCTIONS_WORKER_PROCESS_COUNT on the platform; "
        "with more than one, this process serves HTTP and runs the timers, and the workers run the queues",
    )
    parser.add_argument("--queues-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--niceness", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--host-pid", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--rest-polling-s", type=float, default=0.0, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def _worker_args(args: argparse.Namespace) -> list[str]:
    forwarded = ["--app", args.app, "--app-dir", args.app_dir, "--lease-seconds", str(args.lease_seconds)]
    if args.host_json:
        forwarded += ["--host-json", args.host_json]
    return [*forwarded, "--log-level", args.log_level, "--queues-only", "--worker-processes", "1"]


def _split(args: argparse.Namespace) -> bool:
    """Whether queue triggers run in worker processes, apart from the HTTP process (see ``workers``)."""
    return args.worker_processes > 1 and not args.queues_only


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # azure-core logs every storage request at INFO; a poller would flood the console.
    logging.getLogger("azure").setLevel(max(logging.WARNING, logging.getLogger().level))
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    run_below_the_host(args.niceness, args.host_pid)
    workers = QueueWorkers(
        args.worker_processes if _split(args) else 0,
        worker_command(_worker_args(args)),
        standby=["--rest-polling-s", str(STANDBY_REST_POLLING_S)],
    )
    host = DevHost(
        args.app,
        app_dir=args.app_dir,
        host_json=args.host_json,
        host=args.host,
        port=args.port,
        cors_allowed_origins=args.cors_origin,
        max_body_bytes=args.max_body_bytes,
        body_timeout_s=args.body_timeout_s,
        driver_options=DriverOptions(lease_seconds=args.lease_seconds, rest_polling_interval=args.rest_polling_s),
        serve_http=not args.queues_only,
        run_queues=not _split(args),
        run_timers=not args.queues_only,
        wake_elsewhere=workers.wake if _split(args) else None,
    )
    try:
        host.start()
    except (DevHostError, HostJsonError) as exc:
        print(f"devhost: {exc}", file=sys.stderr)
        return 2
    # Worker processes share the queues (each message goes to one of them), so queue
    # work is not limited to one interpreter's GIL, nor shares the HTTP process's.
    workers.start()
    if args.queues_only:
        listen_for_wakes(sys.stdin.buffer, host.wake)
    else:
        print(host.base_url, flush=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        workers.stop()
        host.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
