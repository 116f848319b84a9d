"""``make demo``: real jobs through the whole path production takes, on this machine.

HTTP API → ``jobs-submit`` queue → submit trigger → local backend (real
processes) → ``jobs-poll`` queue → post-processing → outputs in blob
storage, on a generated scene: imagery makes the composite, training the
model; the composite is cut into tiles and inference runs on every tile as
one job group (``POST /api/groups``), and one artifacts job, submitted
right away with ``after: [groupId]``, waits for the whole group and
packages every tile's results. Exits 0 only if every job succeeded.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hastegeo.cli.client import ApiClient
from hastegeo.cli.groups import ProgressBar, group_lines
from hastegeo.cli.output import print_event, print_job
from hastegeo.cli.sample_data import SCENE_SIZE, upload_sample_scene
from hastegeo_dev.stack import LocalStack
from hastegeo_dev.tiles import cut

PROJECT = "demo"
TIMEOUT_S = 300
TILES = (2, 2)  # rows, columns: inference runs on each as an item of one group


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
            status = _chain(client, Scene(stack.azurite.connection_string, workdir, blobs), backend, started)
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


@dataclass(frozen=True)
class Scene:
    """The uploaded scene, and where the demo may write (tiles) and upload (the inputs container)."""

    connection_string: str
    workdir: Path
    blobs: list[str]


def _chain(client: ApiClient, scene: Scene, backend: str, started: float) -> int:
    rasters = [name for name in scene.blobs if name.endswith(".tif")]
    vectors = [name for name in scene.blobs if name.endswith(".geojson")]
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
            "parameters": {"classes": ["water", "vegetation", "bare", "building"], "packageArtifacts": False},
        },
        f"demo-training-{run}",
    )
    print(f"  validation accuracy: {training.get('summary', {}).get('validationAccuracy')}")
    print(f"  majority-class baseline: {training.get('summary', {}).get('majorityBaselineAccuracy')}")
    if training["state"] != "succeeded":
        return 1
    tiles = _upload_tiles(scene, imagery, run)
    buildings = [{"blob": b} for b in vectors if b.endswith("buildings.geojson")]
    group = client.submit_group(
        {
            "workload": "inference",
            "projectId": PROJECT,
            "backend": backend,
            # What every tile shares: the model (the training job's outputs) and the footprints.
            "inputs": [{"jobId": training["id"], "dest": "model"}, *buildings],
            "parameters": {"packageArtifacts": False},
            "items": [
                {"inputs": [{"blob": blob, "dest": "imagery.tif"}], "labels": {"tile": name}} for name, blob in tiles
            ],
        },
        idempotency_key=f"demo-tiles-{run}",
    )
    print(f"\nPOST /api/groups -> inference group {group['id']}: {group['itemCount']} tiles, one job each")
    items = _made(client, group["id"])
    # The packaging job is submitted now and waits: `after` the group, and on each tile's outputs.
    package = client.submit(
        {
            "workload": "artifacts",
            "projectId": PROJECT,
            "backend": backend,
            "inputs": [{"jobId": item} for item in items],
            "after": [group["id"]],
        },
        idempotency_key=f"demo-package-{run}",
    )
    print(f"POST /api/jobs -> artifacts job {package['id']}, after: [{group['id']}]")
    print(f"  {package['history'][-1]['message']}")
    print(f"\nFollowing group {group['id']}:")
    bar = ProgressBar(sys.stdout)
    final_group = client.watch_group(group["id"], bar, interval=0.3, timeout=TIMEOUT_S)
    bar.close()
    print("\n".join(group_lines(final_group)))
    print(f"\nartifacts job {package['id']} (released by group {group['id']})\nStatus history:")
    packaged = client.watch(package["id"], print_event, interval=0.2, timeout=TIMEOUT_S)
    print_job(packaged)
    finals = [imagery, training, *(client.get(item) for item in items), packaged]
    print(f"\n{len(finals)} jobs in {time.monotonic() - started:.1f}s:")
    for job in finals:
        tile = job.get("labels", {}).get("tile")
        print(f"  {job['workload']:<10} {job['id']}  {job['state']}" + (f"  (tile {tile})" if tile else ""))
    return 0 if all(job["state"] == "succeeded" for job in finals) else 1


def _upload_tiles(scene: Scene, imagery: dict[str, Any], run: int) -> list[tuple[str, str]]:
    """Cut the imagery job's composite into TILES and upload them; (tile name, blob name) for each."""
    from azure.storage.blob import BlobServiceClient

    service = BlobServiceClient.from_connection_string(scene.connection_string)
    (composite,) = (output["blob"] for output in imagery["outputs"] if output["name"] == "outputs/imagery.tif")
    container, _, name = composite.partition("/")
    source = scene.workdir / "imagery.tif"
    source.write_bytes(service.get_container_client(container).download_blob(name).readall())
    tiles = cut(source, scene.workdir / "tiles", *TILES)
    inputs = service.get_container_client("haste-inputs")
    uploaded = []
    for tile in tiles:
        blob = f"{PROJECT}/tiles/{run}/{tile.path.name}"
        with tile.path.open("rb") as data:
            inputs.upload_blob(blob, data, overwrite=True)
        uploaded.append((tile.name, blob))
    print(f"\ncut the composite into {len(tiles)} tiles ({TILES[0]}x{TILES[1]}): {', '.join(b for _, b in uploaded)}")
    return uploaded


def _made(client: ApiClient, group_id: str) -> list[str]:
    """The item job ids once the group's items are all made (the API answered before making them)."""
    deadline = time.monotonic() + TIMEOUT_S
    while (group := client.get_group(group_id))["made"] < group["itemCount"]:
        if time.monotonic() > deadline:
            raise TimeoutError(f"group {group_id} did not make its items within {TIMEOUT_S}s")
        time.sleep(0.2)
    return [job["id"] for job in client.group_jobs(group_id)]


def _run(client: ApiClient, request: dict[str, Any], key: str) -> dict[str, Any]:
    job = client.submit(request, idempotency_key=key)
    print(f"\nPOST /api/jobs -> {job['workload']} job {job['id']}\nStatus history:")
    final = client.watch(job["id"], print_event, interval=0.2, timeout=TIMEOUT_S)
    print_job(final)
    return final
