"""``make demo``: real jobs through the whole path production takes, on this machine.

HTTP API → ``jobs-submit`` queue → submit trigger → local backend (real
processes) → ``jobs-poll`` queue → post-processing → outputs in blob
storage, for the chain imagery → training → inference → artifacts on a
generated scene. Follow-on jobs are started by the pipeline, not by this
script. Exits 0 only if every job succeeded.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from hastegeo.cli.client import ApiClient
from hastegeo.cli.output import print_event, print_job
from hastegeo.cli.sample_data import SCENE_SIZE, upload_sample_scene
from hastegeo_dev.stack import LocalStack

PROJECT = "demo"
TIMEOUT_S = 300


def run_demo(backend: str = "local", keep: bool = False, serve: bool = False) -> int:
    """Run the chain; with ``serve``, keep the stack (and the web console) up afterwards until Ctrl-C."""
    if backend == "azure_ml":
        print("the azure_ml backend needs a workspace (see docs/deploy.md); its tests use a stand-in")
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="haste-demo-"))
    started = time.monotonic()
    settings = {"HASTE_POLL_INITIAL_S": "1", "HASTE_POLL_MAX_S": "3"}
    print("Starting Azurite and the development Functions host ...", flush=True)
    try:
        with contextlib.ExitStack() as resources:
            stack = LocalStack(workdir, settings=settings)
            resources.callback(stack.stop)
            if backend == "azure_batch":
                # A Batch-compatible service on loopback runs each task as a local
                # process and uploads its output files to Azurite, like the real one.
                stack.azurite.start()
                from hastegeo_dev.testing.batch_service import BatchTestService

                service = BatchTestService(stack.azurite.connection_string).start()
                resources.callback(service.stop)
                settings.update(service.settings())
                settings["HASTE_BACKENDS_ENABLED"] = "local,azure_batch"
                print(f"  Batch test service at {service.url}")
            stack.start()
            print(f"  API at {stack.base_url}/api (ready in {time.monotonic() - started:.1f}s)")
            print(f"  web console at {stack.console_url}", flush=True)
            blobs = upload_sample_scene(stack.azurite.connection_string, workdir / "scene", f"{PROJECT}/scene")
            print(f"  uploaded a {SCENE_SIZE}x{SCENE_SIZE} synthetic scene: {', '.join(blobs)}")
            client = ApiClient(stack.base_url)
            status = _chain(client, blobs, backend, started)
            if serve:
                _serve(stack)
            return status
    finally:
        if keep:
            print(f"demo files kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def _serve(stack: LocalStack) -> None:
    """Keep the stack up so the console can be browsed, until Ctrl-C or the host stops."""
    print(f"\nServing the web console at {stack.console_url} (project {PROJECT}); Ctrl-C stops", flush=True)
    stack.serve()


def _chain(client: ApiClient, blobs: list[str], backend: str, started: float) -> int:
    rasters = [name for name in blobs if name.endswith(".tif")]
    vectors = [name for name in blobs if name.endswith(".geojson")]
    run = time.time_ns()
    imagery = _run(
        client,
        {"workload": "imagery", "projectId": PROJECT, "backend": backend, "inputs": [{"blob": b} for b in rasters]},
        f"demo-imagery-{run}",
    )
    if imagery["state"] != "succeeded":
        return 1
    training = _run(
        client,
        {
            "workload": "training",
            "projectId": PROJECT,
            "backend": backend,
            "inputs": [{"jobId": imagery["id"]}, *({"blob": b} for b in vectors)],
            "parameters": {"classes": ["water", "vegetation", "bare", "building"], "runInference": True},
        },
        f"demo-training-{run}",
    )
    print(f"  validation accuracy: {training.get('summary', {}).get('validationAccuracy')}")
    print(f"  majority-class baseline: {training.get('summary', {}).get('majorityBaselineAccuracy')}")
    finals = [imagery, training, *_follow(client, training["id"])]
    print(f"\n{len(finals)} jobs in {time.monotonic() - started:.1f}s:")
    for job in finals:
        print(f"  {job['workload']:<10} {job['id']}  {job['state']}")
    return 0 if all(job["state"] == "succeeded" for job in finals) else 1


def _run(client: ApiClient, request: dict[str, Any], key: str) -> dict[str, Any]:
    job = client.submit(request, idempotency_key=key)
    print(f"\nPOST /api/jobs -> {job['workload']} job {job['id']}\nStatus history:")
    final = client.watch(job["id"], print_event, interval=0.2, timeout=TIMEOUT_S)
    print_job(final)
    return final


def _follow(client: ApiClient, parent_id: str) -> list[dict[str, Any]]:
    """Watch the jobs the pipeline started from ``parent_id``, and theirs, depth first."""
    finals = []
    children = [job for job in client.list(PROJECT) if job.get("parentJobId") == parent_id]
    for child in sorted(children, key=lambda job: str(job["createdAt"])):
        print(f"\nfollow-on {child['workload']} job {child['id']} (started by {parent_id})\nStatus history:")
        final = client.watch(child["id"], print_event, interval=0.2, timeout=TIMEOUT_S)
        print_job(final)
        finals.append(final)
        finals.extend(_follow(client, child["id"]))
    return finals
