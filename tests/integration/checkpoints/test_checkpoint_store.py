"""Checkpoint sets in real Azurite: committed whole or not at all, restored only as listed, never across jobs."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from azure.storage.blob import BlobServiceClient, ContainerClient

from hastegeo.checkpoints import layout
from hastegeo.checkpoints.agent import CheckpointAgent
from hastegeo.checkpoints.store import CheckpointConflict, CheckpointStore, RestoreError
from hastegeo_dev.devhost.azurite import Azurite

pytestmark = pytest.mark.azurite


@pytest.fixture
def container(azurite: Azurite, unique: str) -> Iterator[ContainerClient]:
    client = BlobServiceClient.from_connection_string(azurite.connection_string).get_container_client(f"ck-{unique}")
    client.create_container()
    yield client
    client.delete_container()


def agent_env(azurite: Azurite, container: ContainerClient, job: str, **extra: str) -> dict[str, str]:
    return {
        layout.BLOB_VARIABLE: f"{container.container_name}/jobs/{job}/checkpoints",
        layout.CONNECTION_VARIABLE: azurite.connection_string,
        "HASTE_JOB_ID": job,
        **extra,
    }


def names(container: ContainerClient) -> list[str]:
    return sorted(blob.name for blob in container.list_blobs())


def test_a_set_is_committed_by_its_pointer_and_restored_as_it_was(container: ContainerClient, tmp_path: Path) -> None:
    store = CheckpointStore(container, "jobs/j1/checkpoints")
    folder = tmp_path / "ck"
    (folder / "sub").mkdir(parents=True)
    (folder / "state.json").write_text('{"epoch": 2}')
    (folder / "sub" / "weights.bin").write_bytes(b"\x00\x01" * 1000)
    (folder / ".state.json.123.tmp").write_text("half")  # being written: never part of a set
    first = store.publish(folder, attempt=1, job_id="j1", seen=None)
    assert [f.name for f in first.pointer.files] == ["state.json", "sub/weights.bin"]
    assert store.latest() == first
    target = tmp_path / "again"
    (target).mkdir()
    (target / "stale.json").write_text("from an earlier run on this node")
    store.restore(first.pointer, target)
    assert sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file()) == [
        "state.json",
        "sub/weights.bin",
    ]
    assert (target / "sub" / "weights.bin").read_bytes() == b"\x00\x01" * 1000


def test_a_writer_that_missed_a_commit_is_refused_and_old_sets_are_pruned(
    container: ContainerClient, tmp_path: Path
) -> None:
    store = CheckpointStore(container, "jobs/j2/checkpoints")
    folder = tmp_path / "ck"
    folder.mkdir()
    seen = None
    for epoch in range(1, 5):
        (folder / "state.json").write_text(json.dumps({"epoch": epoch}))
        seen = store.publish(folder, attempt=1, job_id="j2", seen=seen)
    stale = store.latest()
    (folder / "state.json").write_text('{"epoch": 5}')
    store.publish(folder, attempt=2, job_id="j2", seen=stale)
    with pytest.raises(CheckpointConflict):  # an attempt that outlived its node, writing after the new one
        store.publish(folder, attempt=1, job_id="j2", seen=stale)
    latest = store.latest()
    assert latest is not None
    assert latest.pointer.sequence == 5
    sets = {name.split("/")[4] for name in names(container) if "/sets/" in name}
    # The committed set and the one before stay; the loser's set is garbage nobody points to.
    assert {"000004-a1", "000005-a2"} <= sets
    assert not {"000001-a1", "000002-a1", "000003-a1"} & sets


def test_a_set_that_does_not_match_its_pointer_puts_nothing_back(container: ContainerClient, tmp_path: Path) -> None:
    store = CheckpointStore(container, "jobs/j3/checkpoints")
    folder = tmp_path / "ck"
    folder.mkdir()
    (folder / "state.json").write_text('{"epoch": 1}')
    committed = store.publish(folder, attempt=1, job_id="j3", seen=None)
    container.upload_blob(
        f"jobs/j3/checkpoints/sets/{committed.pointer.set_name}/state.json", b"tampered", overwrite=True
    )
    target = tmp_path / "target"
    target.mkdir()
    (target / "mine.json").write_text("kept")
    with pytest.raises(RestoreError, match="does not match its pointer"):
        store.restore(committed.pointer, target)
    assert [p.name for p in target.iterdir()] == ["mine.json"]
    assert not (tmp_path / "target.restoring").exists()


def test_an_empty_folder_is_never_copied(azurite: Azurite, container: ContainerClient, tmp_path: Path) -> None:
    agent = CheckpointAgent.from_environ(tmp_path / "ck", agent_env(azurite, container, "j4"))
    assert agent is not None
    assert agent.restore() is None
    assert agent.sync() is False
    agent.close()
    assert names(container) == []


def test_the_agent_counts_attempts_and_says_what_it_put_back(
    azurite: Azurite, container: ContainerClient, tmp_path: Path
) -> None:
    env = agent_env(azurite, container, "j5")
    first = CheckpointAgent.from_environ(tmp_path / "node1", env)
    assert first is not None
    assert first.restore() is None
    assert first.attempt == 1
    (tmp_path / "node1" / "state.json").write_text('{"epoch": 2}')
    assert first.sync() is True
    assert first.sync() is False  # unchanged: no second copy
    second = CheckpointAgent.from_environ(tmp_path / "node2", env)
    assert second is not None
    assert second.restore() == "the checkpoint of attempt 1"
    assert second.attempt == 2
    assert (tmp_path / "node2" / "state.json").read_text() == '{"epoch": 2}'


def test_a_rerun_resumes_another_jobs_checkpoint_only_when_it_has_none_of_its_own(
    azurite: Azurite, container: ContainerClient, tmp_path: Path
) -> None:
    old = CheckpointAgent.from_environ(tmp_path / "old", agent_env(azurite, container, "j6"))
    assert old is not None
    old.restore()
    (tmp_path / "old" / "state.json").write_text('{"epoch": 3}')
    old.sync()
    resume = f"{container.container_name}/jobs/j6/checkpoints"
    rerun = CheckpointAgent.from_environ(
        tmp_path / "new", agent_env(azurite, container, "j7", **{layout.RESUME_VARIABLE: resume})
    )
    assert rerun is not None
    assert rerun.restore() == "the checkpoint of job j6, attempt 1"
    assert rerun.attempt == 1
    (tmp_path / "new" / "state.json").write_text('{"epoch": 4}')
    rerun.sync()
    # Its copies go under its own prefix; the job it resumed keeps its own checkpoint untouched.
    assert any(name.startswith("jobs/j7/checkpoints/sets/") for name in names(container))
    old_latest = CheckpointStore(container, "jobs/j6/checkpoints").latest()
    assert old_latest is not None
    assert old_latest.pointer.sequence == 1


def test_the_folder_is_copied_periodically_while_the_workload_runs(
    azurite: Azurite, container: ContainerClient, tmp_path: Path
) -> None:
    env = agent_env(azurite, container, "j8", **{layout.INTERVAL_VARIABLE: "0.05"})
    agent = CheckpointAgent.from_environ(tmp_path / "ck", env)
    assert agent is not None
    agent.restore()
    agent.start()
    try:
        (tmp_path / "ck" / "state.json").write_text('{"epoch": 1}')
        store = CheckpointStore(container, "jobs/j8/checkpoints")
        deadline = time.monotonic() + 20
        while store.latest() is None:  # no sync() here: the agent's own thread copies it
            assert time.monotonic() < deadline, "no periodic copy within 20 s"
            time.sleep(0.05)
    finally:
        agent.close()
    latest = store.latest()
    assert latest is not None
    assert [f.name for f in latest.pointer.files] == ["state.json"]
