"""Projects take turns for the local backend's slots, and a project at its limit waits and says why.

Real processes and a real Azurite: project A's burst fills the queue, then one job of project B arrives; B's job
starts before every job of A that was still waiting, and within 2 s (the workloads here each run 0.3 s).
"""

from __future__ import annotations

import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
from azure.storage.blob import BlobServiceClient

from hastegeo.compute.context import BackendContext
from hastegeo.compute.contract import BlobLocation, ComputeJobSpec, ComputeState
from hastegeo.compute.local.adapter import LocalBackend
from hastegeo.settings.load import load_settings
from hastegeo.utils.files import read_json
from hastegeo.utils.turns import admission_order
from hastegeo_dev.devhost.azurite import Azurite

pytestmark = pytest.mark.azurite
BURST = 16
WORKLOAD = ("python", "-c", "import time; time.sleep(0.3)")


def backend(azurite: Azurite, root: Path, slots: int, **env: str) -> LocalBackend:
    settings = load_settings({"AzureWebJobsStorage": azurite.connection_string, "HASTE_LOCAL_ROOT": str(root), **env})
    blobs = BlobServiceClient.from_connection_string(azurite.connection_string)
    if not blobs.get_container_client("haste-outputs").exists():
        blobs.create_container("haste-outputs")
    context = BackendContext(
        settings=settings.backend("local"), blob_service=blobs, project_limit=settings.capacity.project_limit("local")
    )
    return LocalBackend(context, root, slots, sys.executable)


def spec(name: str, project: str, entrypoint: tuple[str, ...] = WORKLOAD) -> ComputeJobSpec:
    return ComputeJobSpec(
        job_id=name,
        name=f"haste-{name}",
        workload="artifacts",
        entrypoint=entrypoint,
        output=BlobLocation(container="haste-outputs", path=f"jobs/{name}"),
        labels={"project": project},
        time_limit_s=60,
    )


def started_at(root: Path, name: str) -> datetime | None:
    running = read_json(root / "jobs" / f"haste-{name}" / "state" / "running.json")
    return datetime.fromisoformat(running["startedAt"]) if running else None


def test_admission_takes_projects_in_turn() -> None:
    waiting = [("a1", "A"), ("a2", "A"), ("a3", "A"), ("b1", "B"), ("c1", "C"), ("b2", "B")]
    assert admission_order(waiting, {"A": 2}, free=4) == ["b1", "c1", "b2", "a1"]
    assert admission_order(waiting, {}, free=3) == ["a1", "b1", "c1"]
    assert admission_order(waiting, {"A": 1}, free=6, limit=1) == ["b1", "c1"]  # A is at its limit; B then too


def test_a_single_job_of_another_project_goes_before_a_waiting_burst(azurite: Azurite, tmp_path: Path) -> None:
    root = tmp_path / "local"
    local = backend(azurite, root, slots=2)
    burst = [f"a{i:02d}" for i in range(BURST)]
    handles = {name: local.submit(spec(name, "A")) for name in burst}
    submitted = time.time()
    handles["b"] = local.submit(spec("b", "B"))
    deadline = time.monotonic() + 60
    while started_at(root, "b") is None:
        assert time.monotonic() < deadline, "B's job never started"
        time.sleep(0.05)
    b_started = started_at(root, "b")
    assert b_started is not None
    assert b_started.timestamp() - submitted < 2.0
    arrived = (root / "jobs" / "haste-b" / "state" / "project").stat().st_mtime  # written as it joins the queue
    later = [
        name for name in burst if (at := started_at(root, name)) and arrived < at.timestamp() < b_started.timestamp()
    ]
    assert later == [], f"jobs of A that were waiting started before B's: {later}"
    for handle in handles.values():
        local.cancel(handle)
    local.close()


def test_a_project_at_its_limit_waits_and_says_why(azurite: Azurite, tmp_path: Path) -> None:
    root = tmp_path / "local"
    local = backend(azurite, root, slots=2, HASTE_PROJECT_MAX_RUNNING_PER_BACKEND="local=1")
    sleeper = ("python", "-c", "import time; time.sleep(30)")
    first = local.submit(spec("a1", "p1", sleeper))
    second = local.submit(spec("a2", "p1", sleeper))
    status = local.status(second)
    assert status.state is ComputeState.QUEUED
    assert status.detail == "waiting: project p1 has 1 of 1 running jobs"
    other = local.submit(spec("b1", "p2", sleeper))  # the second slot is free for another project
    assert local.status(other).state is ComputeState.RUNNING
    for handle in (first, second, other):
        local.cancel(handle)
    local.close()
