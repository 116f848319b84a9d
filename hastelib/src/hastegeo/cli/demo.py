"""``make demo``: a real job through the whole path production takes, on this machine.

HTTP API → ``jobs-submit`` queue → submit trigger → local backend (a real
process) → ``jobs-poll`` queue → post-processing → outputs in blob storage.
Exits 0 only if the job succeeded.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from azure.storage.blob import BlobServiceClient

from hastegeo.cli.client import ApiClient
from hastegeo.cli.main import print_event, print_job
from hastegeo.cli.stack import LocalStack

PROJECT = "demo"
SAMPLE_FILES = {
    "demo/readme.txt": b"haste-compute demo inputs\n",
    "demo/scene/metadata.json": b'{"crs": "EPSG:32633", "bands": ["red", "green", "blue"]}\n',
    "demo/scene/labels.geojson": b'{"type": "FeatureCollection", "features": []}\n',
}


def run_demo(backend: str = "local", keep: bool = False) -> int:
    if backend != "local":
        print(f"the {backend} demo needs its test service; see the README")
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="haste-demo-"))
    started = time.monotonic()
    print("Starting Azurite and the development Functions host ...", flush=True)
    try:
        with LocalStack(workdir, settings={"HASTE_POLL_INITIAL_S": "1", "HASTE_POLL_MAX_S": "5"}) as stack:
            print(f"  API at {stack.base_url}/api (ready in {time.monotonic() - started:.1f}s)")
            blobs = BlobServiceClient.from_connection_string(stack.azurite.connection_string)
            inputs = blobs.get_container_client("haste-inputs")
            for name, data in SAMPLE_FILES.items():
                inputs.upload_blob(name, data, overwrite=True)
            print(f"  uploaded {len(SAMPLE_FILES)} input blobs to haste-inputs/demo/")

            client = ApiClient(stack.base_url)
            request = {
                "workload": "artifacts",
                "projectId": PROJECT,
                "backend": backend,
                "inputs": [{"blob": name} for name in SAMPLE_FILES],
            }
            job = client.submit(request, idempotency_key=f"demo-{time.time_ns()}")
            print(f"\nPOST /api/jobs -> job {job['id']} ({job['state']})\nStatus history:")
            final = client.watch(job["id"], print_event, interval=0.2, timeout=300)
            print()
            print_job(final)
            print(f"\nFinished in {time.monotonic() - started:.1f}s.")
            return 0 if final["state"] == "succeeded" else 1
    finally:
        if keep:
            print(f"demo files kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
