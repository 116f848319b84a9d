"""Azurite with its lookups by name on its own index (ADR 0052): the same answers, from the index.

The preload changes how LokiJS finds and removes Azurite's documents, never what it finds. These
tests hold it to that: Azurite's blob and queue semantics that go through the changed paths (a
delete refused while snapshots exist, a conditional delete, a prefix listing, a message's receipt,
expired messages cleared), and LokiJS's own indexes staying true after removals one by one.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from azure.core import MatchConditions
from azure.core.exceptions import HttpResponseError, ResourceModifiedError, ResourceNotFoundError
from azure.storage.blob import BlobServiceClient
from azure.storage.queue import QueueClient

from hastegeo_dev.devhost.azurite import LOOKUPS, Azurite, find_azurite

pytestmark = pytest.mark.azurite


@pytest.fixture(scope="module")
def azurite() -> Iterator[Azurite]:
    with Azurite(in_memory=True) as emulator:
        yield emulator


def test_azurite_says_the_preload_took(azurite: Azurite) -> None:
    assert azurite.indexed_lookups


def test_blob_deletes_keep_azurites_rules(azurite: Azurite) -> None:
    container = BlobServiceClient.from_connection_string(azurite.connection_string).get_container_client("deletes")
    container.create_container()
    for i in range(50):  # neighbours with the same account, container and snapshot
        container.upload_blob(f"n/{i:03d}", b"x")
    blob = container.upload_blob("kept/one", b"1")
    blob.create_snapshot()
    with pytest.raises(HttpResponseError) as refused:
        blob.delete_blob()
    assert refused.value.error_code == "SnapshotsPresent"
    etag = blob.get_blob_properties().etag
    blob.upload_blob(b"2", overwrite=True)
    with pytest.raises(ResourceModifiedError):
        blob.delete_blob(delete_snapshots="include", etag=etag, match_condition=MatchConditions.IfNotModified)
    blob.delete_blob(delete_snapshots="include")
    with pytest.raises(ResourceNotFoundError):
        blob.get_blob_properties()
    for i in range(0, 50, 2):
        container.delete_blob(f"n/{i:03d}")
    names = [b.name for b in container.list_blobs(name_starts_with="n/")]
    assert names == [f"n/{i:03d}" for i in range(1, 50, 2)]
    for name in names:  # every one still found by name after its neighbours left
        assert container.download_blob(name).readall() == b"x"


def test_queue_messages_keep_their_receipts_and_expire(azurite: Azurite) -> None:
    queue = QueueClient.from_connection_string(azurite.connection_string, "lookups")
    queue.create_queue()
    queue.send_message("short", time_to_live=1)
    sent = [queue.send_message(f"m{i}") for i in range(20)]
    time.sleep(1.5)  # "short" expires; the next call clears it
    received = list(queue.receive_messages(max_messages=32, visibility_timeout=30))
    assert sorted(m.content for m in received) == sorted(f"m{i}" for i in range(20))
    stale = sent[0]
    with pytest.raises(HttpResponseError):  # the receipt of the send, not of the receive
        queue.delete_message(stale.id, stale.pop_receipt)
    for message in received:
        queue.delete_message(message)
    assert queue.get_queue_properties().approximate_message_count == 0


CHECK = Path(__file__).with_name("azurite_lookups_check.js")


def test_lokijs_indexes_stay_true_through_removals_one_by_one() -> None:
    node = shutil.which("node")
    assert node is not None, "Node is a prerequisite of the development stack"
    script = str(Path(find_azurite()).resolve())
    done = subprocess.run(
        [node, str(CHECK)],
        env={"LOOKUPS": str(LOOKUPS), "AZURITE_SCRIPT": script, "PATH": ""},
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    lines = done.stdout.splitlines()
    assert lines[0] == "haste: Azurite lookups by name use its index", done.stdout
    check = json.loads(lines[-1])
    removed = len(range(0, 2000, 3))
    assert check["left"] == check["found"] == 2000 - removed
    assert check["indexes"] == ["name"]
    assert check["sorted"]
    assert check["first"] == ["name", "accountName", "containerName", "snapshot"]
    assert check["block"] == ["blobName", "accountName", "name"]
    assert check["operator"] == ["accountName", "name"]  # only a plain name is an index lookup
    assert check["tables"] == ["PartitionKey", "RowKey"]
