"""What a storage call costs the calling process, through each transport (``python -m tests.bench.transport_bench``).

The same blob client calls (properties, a small upload, a download: what the pipeline's
steps mostly make) against one Azurite, through two clients built alike but for the
session their transport sends through: the one requests makes for azure-core when the
environment is read once (``use_env_settings=False``), and the
:class:`~hastegeo.utils.transport.DirectSession` the app's clients use (ADR 0018).
Each round runs both, and which goes first alternates from round to round (the second
of a pair finds caches and the CPU's clock as the first left them), so a noisy machine
moves both alike; each round's CPU per call is this process's CPU time
(``time.process_time``) over its calls. The ratio is reported per round and as the
median of the per-round ratios, with its spread.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable

from azure.storage.blob import BlobClient, BlobServiceClient

from hastegeo.utils.transport import transport_options
from hastegeo_dev.devhost.azurite import Azurite

CALLS_PER_ROUND = 3  # properties, upload, download


def cpu_per_call_ms(blob: BlobClient, iterations: int) -> float:
    started = time.process_time()
    for _ in range(iterations):
        blob.get_blob_properties()
        blob.upload_blob(b'{"state": "running"}', overwrite=True)
        blob.download_blob().readall()
    return (time.process_time() - started) / (iterations * CALLS_PER_ROUND) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--iterations", type=int, default=100, help="of the three calls, per round and transport")
    args = parser.parse_args()
    with Azurite() as azurite:
        clients: dict[str, Callable[[], BlobServiceClient]] = {
            "requests session": lambda: BlobServiceClient.from_connection_string(
                azurite.connection_string, use_env_settings=False
            ),
            "direct session": lambda: BlobServiceClient.from_connection_string(
                azurite.connection_string, **transport_options({})
            ),
        }
        BlobServiceClient.from_connection_string(azurite.connection_string).create_container("bench")
        BlobServiceClient.from_connection_string(azurite.connection_string).get_blob_client(
            "bench", "doc.json"
        ).upload_blob(b"{}")
        blobs = {name: make().get_blob_client("bench", "doc.json") for name, make in clients.items()}
        for blob in blobs.values():
            cpu_per_call_ms(blob, 20)  # warm: connections open, code paths loaded
        runs: dict[str, list[float]] = {name: [] for name in blobs}
        for round_ in range(args.rounds):
            order = list(blobs.items())
            for name, blob in order[::-1] if round_ % 2 else order:  # odd rounds: the direct session first
                runs[name].append(cpu_per_call_ms(blob, args.iterations))
    plain, direct = runs["requests session"], runs["direct session"]
    print(
        f"CPU per storage call in this process, the direct session against requests' session: {args.rounds} rounds "
        f"of {args.iterations * 3} calls each, which one goes first alternating"
    )
    for name, values in runs.items():
        print(f"  {name:18s} median {statistics.median(values):.3f} ms  (min {min(values):.3f}, max {max(values):.3f})")
    ratios = [d / p for d, p in zip(direct, plain, strict=True)]
    each = ", ".join(f"{ratio:.2f}" for ratio in ratios)
    print(
        f"  direct / requests  median of the per-round ratios {statistics.median(ratios):.2f} "
        f"(min {min(ratios):.2f}, max {max(ratios):.2f})  rounds {each}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
