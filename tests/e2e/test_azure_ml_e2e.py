"""End to end on Azure ML: the HTTP API, the real function code in an in-process host, Azurite, the ML stand-in.

The only thing not real is ``MLClient``: the registry's ``azure_ml`` factory is the production ``create`` given
a :class:`StandInMLClient`. The test plays Azure ML's part: it moves the stand-in's job through its statuses and,
for a job that completes, runs the real workload on the inputs the job mounts and uploads what it wrote to the
job's output folders, as Azure ML's ``rw_mount`` outputs would.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from azure.storage.blob import BlobServiceClient

from hastegeo.cli.client import TERMINAL, ApiClient
from hastegeo.runtime import ensure_storage, reset_runtime
from hastegeo.settings.load import get_settings
from hastegeo.workloads._run.harness import WORKDIR_VARIABLE, iter_files, run_main
from hastegeo.workloads.artifacts.run import package
from hastegeo_dev.devhost.azurite import Azurite
from hastegeo_dev.devhost.functions import load_app
from hastegeo_dev.devhost.host import DevHost
from hastegeo_dev.devhost.queue_driver import DriverOptions
from hastegeo_dev.testing.aml_standin import StandInMLClient
from tests.support.aml import AML_SETTINGS, route_to_standin
from tests.support.storage import isolated_storage

pytestmark = [pytest.mark.azurite]
REPO = Path(__file__).resolve().parents[2]
IMAGE = "hasteacr.azurecr.io/haste/runtime:1.0"
JobView = dict[str, Any]  # a job as GET /api/jobs/{id} returns it


@dataclass
class Stack:
    client: ApiClient
    standin: StandInMLClient
    blobs: BlobServiceClient
    inputs: str
    outputs: str


@pytest.fixture
def start(
    azurite: Azurite, clean_env: pytest.MonkeyPatch, unique: str, tmp_path: Path
) -> Iterator[Callable[..., Stack]]:
    """``start(**env)``: a host over the real app with Azure ML (on the stand-in) enabled, fresh runtime."""
    hosts: list[DevHost] = []

    def run(**env: str) -> Stack:
        settings = {
            **isolated_storage(azurite.connection_string, unique),
            "HASTE_LOCAL_ROOT": str(tmp_path / "local"),
            "HASTE_BACKENDS_ENABLED": "local,azure_ml",
            "HASTE_POLL_INITIAL_S": "1",
            "HASTE_POLL_MAX_S": "1",
            **AML_SETTINGS,
            "AML_RETRY_DELAY_S": "0.1",
            # The host injects this caller, as App Service authentication would (docs/adr/0007).
            "HASTE_DEV_PRINCIPAL": "name=aml-e2e@example.com;roles=Haste.Submitter;projects=p1",
            **env,
        }
        for key, value in settings.items():
            clean_env.setenv(key, value)
        standin = StandInMLClient()
        route_to_standin(clean_env, standin)
        get_settings.cache_clear()
        reset_runtime()
        ensure_storage(get_settings())
        blobs = BlobServiceClient.from_connection_string(azurite.connection_string)
        options = DriverOptions(lease_seconds=5, stop_grace=1.0)
        hosts.append(DevHost(load_app("function_app:app", REPO), app_dir=REPO, port=0, driver_options=options).start())
        client = ApiClient(hosts[-1].base_url, timeout=10)
        return Stack(client, standin, blobs, settings["HASTE_INPUTS_CONTAINER"], settings["HASTE_OUTPUTS_CONTAINER"])

    yield run
    for host in hosts:
        host.stop(timeout=3)
    reset_runtime()
    get_settings.cache_clear()


def wait_for(client: ApiClient, job_id: str, done: Callable[[JobView], bool], timeout: float = 15) -> JobView:
    deadline = time.monotonic() + timeout
    while not done(job := client.get(job_id)):
        if time.monotonic() > deadline:
            lines = [event["message"] for event in job["history"]][-6:]
            raise AssertionError(f"job {job_id} is {job['state']} after {timeout}s: {lines}")
        time.sleep(0.1)
    return job


def messages(job: JobView) -> list[str]:
    return [event["message"] for event in job["history"]]


def submit(stack: Stack, *, bound: bool = True, blob: str = "p1/scene.txt") -> str:
    stack.blobs.get_blob_client(stack.inputs, blob).upload_blob(b"a small input\n" * 64, overwrite=True)
    request = {"workload": "artifacts", "projectId": "p1", "backend": "azure_ml", "inputs": [{"blob": blob}]}
    job_id = str(stack.client.submit(request)["id"])
    if bound:
        wait_for(stack.client, job_id, lambda job: job["state"] == "running")  # bound to its Azure ML job
    return job_id


def play_azure_ml(stack: Stack, job_id: str, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What Azure ML does for the command job: mount inputs, run the workload, write its output folders."""
    job = stack.standin.submitted(f"haste-{job_id}")
    for mounted in job.inputs.values():
        blob = mounted.path.split("/paths/", 1)[1]
        (workdir / "inputs").mkdir(parents=True, exist_ok=True)
        (workdir / "inputs" / blob.rsplit("/", 1)[-1]).write_bytes(
            stack.blobs.get_blob_client(stack.inputs, blob).download_blob().readall()
        )
    monkeypatch.setenv(WORKDIR_VARIABLE, str(workdir))
    monkeypatch.setenv("HASTE_PARAMS_JSON", job.environment_variables["HASTE_PARAMS_JSON"])
    assert run_main("artifacts", package) == 0
    for folder in ("outputs", "logs"):
        datastore = stack.outputs.replace("-", "_")
        prefix = f"jobs/{job_id}/{folder}/"
        assert job.outputs[folder].path == f"azureml://datastores/{datastore}/paths/{prefix}"
        for path in iter_files(workdir / folder):
            name = prefix + path.relative_to(workdir / folder).as_posix()
            stack.blobs.get_blob_client(stack.outputs, name).upload_blob(path.read_bytes(), overwrite=True)


def test_an_azure_ml_job_succeeds_through_the_api(
    start: Callable[..., Stack], clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    stack = start()
    job_id = submit(stack)
    name = f"haste-{job_id}"
    assert [n for op, n in stack.standin.calls if op == "jobs.create_or_update"] == [name]  # one, by our name
    assert stack.standin.submitted(name).compute == "haste-cpu"
    stack.standin.set_status(name, "Running")
    wait_for(stack.client, job_id, lambda job: "Azure ML: Running (running)" in messages(job))
    play_azure_ml(stack, job_id, tmp_path / "aml", clean_env)
    stack.standin.set_status(name, "Completed")

    final = wait_for(stack.client, job_id, lambda job: job["state"] in TERMINAL)
    assert final["state"] == "succeeded", messages(final)
    assert final["backend"] == "azure_ml"
    assert [o["name"] for o in final["outputs"]] == ["outputs/artifacts_manifest.json", "outputs/artifacts.zip"]
    assert all(o["blob"].startswith(f"{stack.outputs}/jobs/{job_id}/outputs/") for o in final["outputs"])
    assert final["summary"] == {"files": 1, "bytes": 14 * 64}
    assert any(m.startswith("submitted to azure_ml (") and f"job_name={name}" in m for m in messages(final))
    assert messages(final)[-1] == "succeeded with 2 output(s)"
    order = ["queued", "submitting", "running", "postprocessing", "succeeded"]
    states = [event["state"] for event in final["history"]]
    assert sorted(set(states), key=order.index) == order
    assert states == sorted(states, key=order.index)


def test_canceled_azure_ml_jobs_end_cancelled(start: Callable[..., Stack]) -> None:
    stack = start()
    external, requested = submit(stack), submit(stack)
    stack.standin.set_status(f"haste-{external}", "Running")
    stack.standin.set_status(f"haste-{external}", "Canceled")  # e.g. canceled in Azure ML studio
    stack.client.cancel(requested)  # through the API: the adapter asks Azure ML to cancel
    wait_for(stack.client, requested, lambda job: job["state"] == "cancel_requested")
    assert ("jobs.begin_cancel", f"haste-{requested}") in stack.standin.calls
    stack.standin.set_status(f"haste-{requested}", "Canceled")  # Azure ML finishes the cancellation

    for job_id in (external, requested):
        final = wait_for(stack.client, job_id, lambda job: job["state"] in TERMINAL)
        assert final["state"] == "cancelled", messages(final)
        assert final["reason"] == "The Azure ML job was canceled"
        assert "cancelled: The Azure ML job was canceled" in messages(final)
        assert "succeeded" not in {event["state"] for event in final["history"]}
        assert final["outputs"] == []


def test_a_missing_registered_environment_is_created_once(start: Callable[..., Stack]) -> None:
    stack = start(AML_ENVIRONMENT_SOURCE="registered", AML_ENVIRONMENT="haste-runtime@latest")
    ids = [submit(stack, bound=False) for _ in range(2)]  # side by side: both submits may race to create it
    jobs = [wait_for(stack.client, job_id, lambda job: job["state"] == "running") for job_id in ids]

    assert stack.standin.count("environments.create_or_update") == 1
    assert stack.standin.count("jobs.create_or_update") == 2
    note = f"Environment haste-runtime:1 did not exist and was created from image:{IMAGE}"
    bind_lines = [next(m for m in messages(job) if m.startswith("submitted to azure_ml (")) for job in jobs]
    assert sum(line.endswith(f"; {note}") for line in bind_lines) == 1, bind_lines  # the submit that created it
    assert all("environment=haste-runtime:1" in line for line in bind_lines)
    for job_id in ids:
        assert stack.standin.submitted(f"haste-{job_id}").environment == "azureml:haste-runtime:1"
        stack.standin.set_status(f"haste-{job_id}", "Canceled")  # end both, leaving no poll chain behind
    for job_id in ids:
        assert wait_for(stack.client, job_id, lambda job: job["state"] in TERMINAL)["state"] == "cancelled"
