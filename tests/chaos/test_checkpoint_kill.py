"""A host killed while it copies a checkpoint: the previous checkpoint stays the one put back, whole.

A real process copies a checkpoint folder to Azurite (``hastegeo.checkpoints``, as the workload
runtime does on a node), saying as it goes which file it starts and finishes; it is killed with
SIGKILL at a different point each round: after the first file, as the third starts, and with
every file copied but the pointer not yet written. A restore afterwards must put back the previous
set exactly, never a mix, and a later copy must commit cleanly after the dead one. Bounded: three
rounds of a few hundred kilobytes, seconds in all.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from azure.storage.blob import BlobServiceClient, ContainerClient

from hastegeo.checkpoints.store import CheckpointStore
from hastegeo_dev.devhost.azurite import Azurite

from .conftest import Outcome

pytestmark = [pytest.mark.azurite]
FILES = 6
FILE_BYTES = 64 * 1024
ROUNDS = ("done part-0.bin", "start part-2.bin", "done part-5.bin")  # the copier's line to kill it at
COPIER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from azure.storage.blob import BlobServiceClient
    from hastegeo.checkpoints import store as module
    from hastegeo.checkpoints.store import CheckpointStore
    original = module._upload
    def told(container, name, handle):  # a slow link: the test kills it between its lines
        print("start", name.rsplit("/", 1)[1], flush=True)
        time.sleep(0.2)
        result = original(container, name, handle)
        print("done", name.rsplit("/", 1)[1], flush=True)
        time.sleep(0.2)
        return result
    module._upload = told
    connection, container, prefix, folder = sys.argv[1:5]
    blobs = BlobServiceClient.from_connection_string(connection)
    store = CheckpointStore(blobs.get_container_client(container), prefix)
    seen = store.latest()
    print("copying", flush=True)
    store.publish(Path(folder), attempt=2, job_id="chaos", seen=seen)
    print("committed", flush=True)
    """
)


@pytest.fixture
def container(azurite: Azurite, unique: str) -> Iterator[ContainerClient]:
    client = BlobServiceClient.from_connection_string(azurite.connection_string).get_container_client(f"ckc-{unique}")
    client.create_container()
    yield client
    client.delete_container()


def fill(folder: Path, label: bytes) -> dict[str, str]:
    """``FILES`` files whose content names ``label``; their sha256 by name."""
    folder.mkdir(parents=True, exist_ok=True)
    digests = {}
    for index in range(FILES):
        data = (label + b"-%d-" % index) * (FILE_BYTES // (len(label) + 4))
        (folder / f"part-{index}.bin").write_bytes(data)
        digests[f"part-{index}.bin"] = hashlib.sha256(data).hexdigest()
    return digests


def contents(folder: Path) -> dict[str, str]:
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in sorted(folder.iterdir())}


@pytest.mark.parametrize("kill_at", ROUNDS)
def test_killed_mid_copy_leaves_the_previous_checkpoint_whole(
    azurite: Azurite, container: ContainerClient, tmp_path: Path, kill_at: str, outcome: Outcome
) -> None:
    prefix = "jobs/chaos/checkpoints"
    store = CheckpointStore(container, prefix)
    previous = fill(tmp_path / "epoch1", b"epoch-one")
    store.publish(tmp_path / "epoch1", attempt=1, job_id="chaos", seen=None)
    fill(tmp_path / "epoch2", b"epoch-two")
    copier = subprocess.Popen(
        [
            sys.executable,
            "-c",
            COPIER,
            azurite.connection_string,
            container.container_name,
            prefix,
            str(tmp_path / "epoch2"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ},
    )
    seen = []
    try:
        assert copier.stdout is not None
        for raw in iter(copier.stdout.readline, b""):  # ends when the copier does (bounded by its own work)
            seen.append(raw.decode().strip())
            if seen[-1] == kill_at:
                copier.send_signal(signal.SIGKILL)  # the host is gone, mid-copy
                break
    finally:
        copier.wait(timeout=30)
    outcome.jobs += 1
    assert seen[-1] == kill_at, seen
    assert copier.returncode == -signal.SIGKILL, copier.stderr and copier.stderr.read()

    latest = store.latest()
    assert latest is not None
    assert latest.pointer.sequence == 1, "the pointer moved to a set that is not whole"
    restored = tmp_path / "restored"
    store.restore(latest.pointer, restored)
    assert contents(restored) == previous  # the previous checkpoint, every byte, and nothing of the dead copy
    outcome.terminal += 1

    # The next attempt copies after the dead one and commits cleanly over its leftovers.
    again = store.publish(tmp_path / "epoch2", attempt=3, job_id="chaos", seen=latest)
    assert again.pointer.sequence == 2
    store.restore(again.pointer, restored)
    assert contents(restored) == contents(tmp_path / "epoch2")
    outcome.succeeded += 1
    outcome.notes.append(f"killed at {kill_at!r}")
