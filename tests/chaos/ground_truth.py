"""Ground truth after a chaos scenario, read without the pipeline's code.

The scenario's own checks (:mod:`.checks`) read the API's view of each job. These read
what is really there, through the storage SDKs, the filesystem, ``/proc`` and the Batch
test service's own records, so a pipeline that reports success it did not achieve fails
here:

- **processes**: no workload process of the scenario is left running (nor a zombie nobody
  reaped), and each job's workload started as many times as its history says, counted
  by the workload itself (``starts_site/sitecustomize.py`` appends a line per start);
- **queues**: every queue drained; a poison queue holds exactly the messages the
  scenario expects;
- **store**: every job document's state agrees with its ``active/`` or ``ended/<state>/``
  index entry, and no index entry lacks its document;
- **providers**: every Batch job of a cancelled or expired job is stopped (the test
  service's record), no Batch task started twice; every local job that ended with a
  handle has its exit record on disk;
- **outputs**: every succeeded job's outputs exist in blob storage and match the
  manifest's sizes and sha256.

The layout rules used here (index entry names, the document's JSON members) are written
out again on purpose rather than imported: the check must not share a bug with the code
it checks. Each column holds the number of violations (0 is clean; ``None``: not
checked in this scenario). Any scenario calls :func:`check`; others may add columns.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from azure.storage.blob import BlobServiceClient
from azure.storage.queue import QueueServiceClient

from .conftest import Outcome

COLUMNS = ("processes", "queues", "store", "providers", "outputs")
STARTS_SITE = Path(__file__).parent / "starts_site"
STARTS_VARIABLE = "HASTE_CHAOS_STARTS_DIR"
WORKLOAD_MODULE = "hastegeo.compute.local_node.run"
TERMINAL = frozenset({"succeeded", "failed", "cancelled"})
LOCAL_PREFIX = "haste-"  # a local job's folder and process are named haste-<job id>
INVERT_MS = 10**13  # index entry keys: <10**13 - created ms, 13 digits>-<job id>


def starts_env(starts_dir: Path, pythonpath: str | None = None) -> dict[str, str]:
    """Settings that make every local workload of a stack record its own starts in ``starts_dir``."""
    starts_dir.mkdir(parents=True, exist_ok=True)
    path = os.pathsep.join(part for part in (str(STARTS_SITE), pythonpath or os.environ.get("PYTHONPATH", "")) if part)
    return {STARTS_VARIABLE: str(starts_dir), "PYTHONPATH": path}


@dataclass
class Scene:
    """Where a scenario's truth lives. Leave a part out (None) when the scenario has no such part."""

    blobs: BlobServiceClient
    jobs_container: str
    queues: QueueServiceClient | None = None
    local_root: Path | None = None
    starts_dir: Path | None = None
    batch: Any | None = None  # a hastegeo_dev.testing.batch_service.BatchTestService
    expected_poison: Mapping[str, int] = field(default_factory=dict)  # poison queue -> messages expected
    drain: Callable[[], None] | None = None  # consumes due messages when no host does (in-process scenarios)
    settle_s: float = 30.0  # how long queues and processes may take to settle


def check(outcome: Outcome, scene: Scene) -> None:
    """Fill ``outcome.truth`` (and its notes) from what storage, disk, /proc and the provider hold."""
    documents = _documents(scene)
    truth = outcome.truth
    truth["processes"] = _processes(outcome, scene, documents) if scene.local_root is not None else None
    truth["queues"] = _queues(outcome, scene) if scene.queues is not None else None
    truth["store"] = _store(outcome, scene, documents)
    truth["providers"] = _providers(outcome, scene, documents)
    truth["outputs"] = _outputs(outcome, scene, documents)


def assert_true(outcome: Outcome) -> None:
    bad = {name: count for name, count in outcome.truth.items() if count}
    assert not bad, (bad, outcome.notes)


# -- reading -----------------------------------------------------------------------------------


def _documents(scene: Scene) -> dict[str, dict[str, Any]]:
    container = scene.blobs.get_container_client(scene.jobs_container)
    found = {}
    for blob in container.list_blobs(name_starts_with="jobs/"):
        name = str(blob.name)
        if name.endswith(".json"):
            found[name.removeprefix("jobs/").removesuffix(".json")] = json.loads(
                container.download_blob(name).readall()
            )
    return found


def _settle(test: Callable[[], list[str]], seconds: float, drain: Callable[[], None] | None = None) -> list[str]:
    """``test()`` (a list of problems) once it is empty, or as it stands after ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        if drain is not None:
            drain()
        problems = test()
        if not problems or time.monotonic() > deadline:
            return problems
        time.sleep(0.25)


# -- processes ---------------------------------------------------------------------------------


def workload_processes(local_root: Path) -> list[str]:
    """``pid state`` of every process of ``local_root``'s workloads still in the process table."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # gone meanwhile
        if WORKLOAD_MODULE.encode() in argv and str(local_root).encode() in argv:
            state = stat.rpartition(")")[2].split()[0]
            found.append(f"pid {entry.name} ({'zombie' if state == 'Z' else 'running'})")
    return found


def _processes(outcome: Outcome, scene: Scene, documents: dict[str, dict[str, Any]]) -> int:
    assert scene.local_root is not None
    left = _settle(lambda: workload_processes(scene.local_root or Path()), scene.settle_s)
    outcome.notes.extend(f"workload process left: {item}" for item in left)
    bad = len(left)
    if scene.starts_dir is None:
        return bad
    for job_id, job in documents.items():
        if (job.get("handle") or {}).get("backend") != "local":
            continue
        marks = scene.starts_dir / f"{LOCAL_PREFIX}{job_id}"
        starts = len(marks.read_text().splitlines()) if marks.exists() else 0
        messages = [event["message"] for event in job.get("history", [])]
        submitted = sum(1 for m in messages if m.startswith("submitted to "))
        finished = any(m.startswith("workload finished") for m in messages)
        # A local workload runs at most once per submission, and did run if the history says it finished;
        # a job cancelled or expired while waiting for a slot may never have started.
        if starts > submitted or (finished and starts == 0) or starts > 1:
            bad += 1
            outcome.notes.append(f"{job_id}: workload started {starts} time(s); history: {submitted} submission(s)")
    return bad


# -- queues ------------------------------------------------------------------------------------


# The job events are the consumers' queue: nothing here reads it, so it only grows. Its own truth
# (every stored change has its event, none without) is checked by tests/chaos/test_events_truth.py.
NOT_DRAINED = frozenset({"jobs-events"})


def queue_depths(queues: QueueServiceClient) -> dict[str, int]:
    """Messages in every work queue of the account, visible or not."""
    return {
        str(queue.name): int(queues.get_queue_client(queue.name).get_queue_properties().approximate_message_count)
        for queue in queues.list_queues()
        if queue.name not in NOT_DRAINED
    }


def _queues(outcome: Outcome, scene: Scene) -> int:
    assert scene.queues is not None
    queues = scene.queues

    def problems() -> list[str]:
        depths = queue_depths(queues)
        wanted = {name: scene.expected_poison.get(name, 0) for name in depths}
        return [
            f"queue {name}: {depths[name]} message(s), expected {want}"
            for name, want in wanted.items()
            if depths[name] != want
        ]

    left = _settle(problems, scene.settle_s, scene.drain)
    outcome.notes.extend(left)
    for name in queue_depths(queues) if left else ():
        for message in queues.get_queue_client(name).peek_messages(max_messages=5):  # the visible ones
            outcome.notes.append(f"queue {name}: {message.content} (dequeued {message.dequeue_count} times)")
    return len(left)


# -- store -------------------------------------------------------------------------------------


def entry_key(job: Mapping[str, Any]) -> str:
    created = datetime.fromisoformat(str(job["createdAt"]).replace("Z", "+00:00"))
    return f"{INVERT_MS - int(created.timestamp() * 1000):013d}-{job['id']}"


def _events_pending(document: dict[str, Any]) -> bool:
    """Whether the document records state changes later than the events it says it published."""
    changes = document.get("stateChanges") or []
    return bool(changes) and int(changes[-1]["seq"]) > int(document.get("eventsPublished", 0))


def store_after_sweep(outcome: Outcome, scene: Scene) -> int:
    """The store column once the reconciler's sweep has run past the publish grace (ADR 0024): strict,
    an ended job's ``active/`` entry is a violation whatever its events, and nothing is waited for."""
    return _store(outcome, scene, _documents(scene), swept=True)


def _store(outcome: Outcome, scene: Scene, documents: dict[str, dict[str, Any]], *, swept: bool = False) -> int:
    """Entries against documents. An entry a failed delete left behind is repaired by the reconciler's
    next pass (ADR 0011), so the check waits up to ``settle_s`` for what is left to clear (none once
    ``swept``: the caller ran that pass)."""
    container = scene.blobs.get_container_client(scene.jobs_container)
    notes: list[str] = []

    def problems() -> list[str]:
        notes.clear()
        names = {
            str(blob.name)
            for prefix in ("index/", "active/", "ended/")
            for blob in container.list_blobs(name_starts_with=prefix)
        }
        found = []
        expected: set[str] = set()
        for job_id, job in documents.items():
            key, project, state = entry_key(job), job["projectId"], job["state"]
            state_entry = f"ended/{project}/{state}/{key}" if state in TERMINAL else f"active/{project}/{key}"
            wanted = {f"index/{project}/{key}", state_entry}
            expected |= wanted
            found += [f"{job_id} ({state}): no entry {name}" for name in sorted(wanted - names)]
        for name in sorted(names - expected):
            key = name.rpartition("/")[2]
            job_id = key.partition("-")[2]
            if job_id in documents and key != entry_key(documents[job_id]):
                # A create retried under the same id wrote entries at its own time before it found the
                # document: an entry too many, at another position, that every reader skips and deletes.
                notes.append(f"entry {name}: at another position than its document (left to readers)")
                continue
            if not swept and job_id in documents and name.startswith("active/") and _events_pending(documents[job_id]):
                # An ended job keeps its active entry until its events are out (the entry going is their
                # record, so its document shows them pending); the reconciler's sweep publishes them once
                # the job has been still for a minute (ADR 0024).
                notes.append(f"entry {name}: {documents[job_id]['state']}, events not yet published")
                continue
            what = f"its document says {documents[job_id]['state']}" if job_id in documents else "no document"
            found.append(f"entry {name}: {what}")
        return found

    left = _settle(problems, 0.0 if swept else scene.settle_s)
    outcome.notes.extend(notes + left)
    return len(left)


# -- providers ---------------------------------------------------------------------------------


def _stopped_on_purpose(job: Mapping[str, Any]) -> bool:
    """Cancelled, or failed by its deadline: the provider's job must have been stopped."""
    return job["state"] == "cancelled" or (
        job["state"] == "failed" and "before its deadline" in (job.get("reason") or "")
    )


def _providers(outcome: Outcome, scene: Scene, documents: dict[str, dict[str, Any]]) -> int | None:
    if scene.batch is None and scene.local_root is None:
        return None
    problems = []
    handles = {job_id: job["handle"] for job_id, job in documents.items() if job.get("handle")}
    if scene.batch is not None:
        engine = scene.batch.engine
        with engine.lock:
            records = {
                job_id: (job.state, [(task.id, task.state, task.runs, task.process) for task in job.tasks.values()])
                for job_id, job in engine.jobs.items()
            }
        for job_id, (_, tasks) in records.items():
            problems += [f"batch {job_id}/{task}: started {runs} times" for task, _, runs, _ in tasks if runs > 1]
            if len(tasks) > 1:
                problems.append(f"batch {job_id}: {len(tasks)} tasks for one job")
        for job_id, handle in handles.items():
            if handle["backend"] != "azure_batch" or not _stopped_on_purpose(documents[job_id]):
                continue
            state, tasks = records.get(handle["providerIds"]["job_id"], ("missing", []))
            running = [
                task
                for task, task_state, _, process in tasks
                if task_state != "completed" or (process is not None and process.poll() is None)
            ]
            if state not in ("terminating", "completed") or running:
                problems.append(
                    f"{job_id} ({documents[job_id]['state']}): batch job {state}, tasks not stopped: {running}"
                )
    if scene.local_root is not None:
        for job_id, handle in handles.items():
            job = documents[job_id]
            if handle["backend"] != "local" or job["state"] not in TERMINAL:
                continue
            record = scene.local_root / "jobs" / f"{LOCAL_PREFIX}{job_id}" / "state" / "exit.json"
            ran = (scene.starts_dir / f"{LOCAL_PREFIX}{job_id}").exists() if scene.starts_dir else True
            if ran and not record.exists():
                problems.append(f"{job_id} ({job['state']}): its local workload has no exit record")
    outcome.notes.extend(problems)
    return len(problems)


# -- outputs -----------------------------------------------------------------------------------


def _sha256(chunks: Iterable[bytes]) -> tuple[int, str]:
    digest, size = hashlib.sha256(), 0
    for chunk in chunks:
        digest.update(chunk)
        size += len(chunk)
    return size, digest.hexdigest()


def _outputs(outcome: Outcome, scene: Scene, documents: dict[str, dict[str, Any]]) -> int:
    problems = []
    for job_id, job in documents.items():
        if job["state"] != "succeeded":
            continue
        records = job.get("outputs") or []
        manifests = [r for r in records if r["name"].startswith("outputs/") and r["name"].endswith("_manifest.json")]
        if len(manifests) != 1:
            problems.append(f"{job_id}: {len(manifests)} manifest(s) among its outputs")
            continue
        container, _, manifest_blob = manifests[0]["blob"].partition("/")
        client = scene.blobs.get_container_client(container)
        manifest = json.loads(client.download_blob(manifest_blob).readall())
        prefix = manifest_blob.rpartition("/")[0]
        listed = {f"outputs/{item['name']}": item for item in manifest["files"]}
        stored = {r["name"]: r for r in records}
        for name, item in listed.items():
            blob = f"{prefix}/{item['name']}"
            if not client.get_blob_client(blob).exists():
                problems.append(f"{job_id}: {name} is not in storage")
                continue
            size, sha = _sha256(client.download_blob(blob).chunks())
            if (size, sha) != (item["size"], item["sha256"]):
                problems.append(
                    f"{job_id}: {name} is {size} bytes {sha[:12]}, "
                    f"the manifest says {item['size']} {item['sha256'][:12]}"
                )
            record = stored.get(name)
            if record is None or record["size"] != size or record.get("sha256") not in (None, sha):
                problems.append(f"{job_id}: the job's record of {name} ({record}) does not match storage")
    outcome.notes.extend(problems)
    return len(problems)
