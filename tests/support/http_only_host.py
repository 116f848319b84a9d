"""The development host serving HTTP only: no queue pollers, no timers.

``python -m tests.support.http_only_host PORT`` (from the repository root), or
:class:`tests.support.hosts.HttpOnlyHost` from a test. The fuzz counts the messages on ``jobs-submit``;
with the queue triggers running, the host would consume them (and run workloads)
while the count is taken, so this host leaves the queues alone. Tests that need
only the API (the installed CLI's) start it because it starts sooner.
Everything else is what ``python -m hastegeo_dev.devhost`` does: the same app, host.json,
settings and ``HASTE_DEV_PRINCIPAL`` injection.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from types import FrameType

from hastegeo_dev.devhost.host import DevHost


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("azure").setLevel(logging.WARNING)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    host = DevHost("function_app:app", app_dir=".", port=int(argv[0]), run_queues=False, run_timers=False)
    host.start()
    print(host.base_url, flush=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        host.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
