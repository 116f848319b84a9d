"""``python -m hastegeo_dev.testing.batch_service``: run the Batch test service until interrupted."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

from hastegeo_dev.testing.batch_service.server import BatchTestService


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hastegeo_dev.testing.batch_service", description=__doc__)
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free port)")
    parser.add_argument(
        "--azurite",
        default=os.environ.get("AzureWebJobsStorage", ""),  # noqa: SIM112 - the Functions setting's real name
        help="Azurite connection string for resource and output files (default: $AzureWebJobsStorage)",
    )
    parser.add_argument("--account-name", default="hastetest")
    parser.add_argument("--root", default=None, help="directory for task folders (default: a temp dir)")
    args = parser.parse_args(argv)
    # The key is generated per run and printed once, for the caller to put into BATCH_ACCOUNT_KEY.
    service = BatchTestService(args.azurite or None, account_name=args.account_name, port=args.port, root=args.root)
    # Handlers first: a caller may send SIGTERM as soon as it reads the URL, and must get a clean stop.
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    service.start()
    print(f"BATCH_ACCOUNT_URL={service.url}", flush=True)
    print(f"BATCH_ACCOUNT_NAME={service.account_name}", flush=True)
    print(f"BATCH_ACCOUNT_KEY={service.account_key}", flush=True)
    print("BATCH_AUTH_MODE=shared_key", flush=True)
    stop.wait()
    service.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
