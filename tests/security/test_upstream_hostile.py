"""Hostile messages on the upstream ``jobs-requests`` path: each is rejected, recorded with a reason, never retried.

First against the upstream step directly (a runtime on the session's Azurite), then through the real queue and
the development host, which must consume every such message and stay healthy.
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest
from azure.storage.blob import ContainerClient

from hastegeo.runtime import Runtime
from hastegeo.store.queues import POISON_SUFFIX, REQUESTS_QUEUE, SUBMIT_QUEUE
from hastegeo_dev.stack import LocalStack
from tests.conftest import RuntimeFactory
from tests.security.conftest import stack_container, stack_queue, wait_until

pytestmark = pytest.mark.azurite

VALID: dict[str, Any] = {"workload": "artifacts", "projectId": "p1", "inputs": [{"blob": "p1/a.txt"}]}
FIVE_MB = 5 * 1024 * 1024

HOSTILE: dict[str, str] = {
    "malformed-json": '{"workload": "artifacts", "projectId": ',
    "trailing-garbage": json.dumps(VALID) + " }",
    "empty": "",
    "json-array": json.dumps([VALID]),
    "json-string": json.dumps("artifacts"),
    "json-null": "null",
    "json-number": "42",
    "wrong-types": json.dumps({"workload": 5, "projectId": ["p1"], "inputs": "p1/a.txt", "labels": []}),
    "unknown-workload": json.dumps({**VALID, "workload": "mining"}),
    "unknown-field": json.dumps({**VALID, "priority": "urgent"}),
    "server-owned-fields": json.dumps({**VALID, "state": "succeeded", "handle": {"backend": "local"}, "id": "x"}),
    "path-traversal-input": json.dumps({**VALID, "inputs": [{"blob": "../../etc/passwd"}]}),
    "huge-string": json.dumps({**VALID, "workload": "x" * FIVE_MB}),
    "huge-parameter": json.dumps({**VALID, "parameters": {"x": "y" * FIVE_MB}}),
    "deeply-nested-array": "[" * 100_000,
    "deeply-nested-object": '{"a":' * 50_000 + "1" + "}" * 50_000,
    "nested-in-parameters": json.dumps({**VALID, "parameters": {"x": "@"}}).replace('"@"', "[" * 5000 + "]" * 5000),
    "integer-too-long": '{"workload": "artifacts", "projectId": "p1", "parameters": {"n": ' + "9" * 5000 + "}}",
    "not-a-number": '{"workload": "artifacts", "projectId": "p1", "parameters": {"n": NaN}}',
}


def _rejections(container: ContainerClient) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for blob in container.list_blobs(name_starts_with="rejected/"):
        found[blob.name] = json.loads(container.download_blob(blob.name).readall())
    return found


# What a reconciler pass writes on its own schedule, whatever the test sends.
RECONCILER_OWN = ("capacity/", "costs/")


def _job_blobs(container: ContainerClient) -> list[str]:
    """Every job document and index entry; not the rejections, nor the store's own ``keys/`` (its token key
    and the index marker a reconciler pass may write at any time)."""
    return [blob.name for blob in container.list_blobs() if not blob.name.startswith(("rejected/", "keys/"))]


def _submit_depth(runtime: Runtime) -> int:
    return int(runtime.queues.client(SUBMIT_QUEUE).get_queue_properties().approximate_message_count or 0)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_upstream_message_is_rejected_with_a_recorded_reason_and_stores_no_job(
    make_runtime: RuntimeFactory, name: str
) -> None:
    runtime = make_runtime()
    container = runtime.blobs.get_container_client(runtime.settings.storage.jobs_container)
    queued_before = _submit_depth(runtime)

    result = runtime.upstream.handle(HOSTILE[name], f"msg-{name}")

    assert result is None
    records = _rejections(container)
    assert len(records) == 1, records.keys()
    record = next(iter(records.values()))
    assert record["messageId"] == f"msg-{name}"
    assert isinstance(record["reason"], str)
    assert record["reason"].strip()
    assert len(record["body"]) <= 4096
    assert _job_blobs(container) == []
    assert _submit_depth(runtime) == queued_before


def test_a_redelivered_hostile_message_is_rejected_again_without_creating_a_job(make_runtime: RuntimeFactory) -> None:
    runtime = make_runtime()
    container = runtime.blobs.get_container_client(runtime.settings.storage.jobs_container)
    for _ in range(3):
        assert runtime.upstream.handle(HOSTILE["unknown-workload"], "same-id") is None
    assert len(_rejections(container)) == 1
    assert _job_blobs(container) == []


def test_a_hostile_message_id_cannot_steer_where_the_rejection_is_written(make_runtime: RuntimeFactory) -> None:
    runtime = make_runtime()
    container = runtime.blobs.get_container_client(runtime.settings.storage.jobs_container)
    assert runtime.upstream.handle("{nope", "../../jobs/evil/../x" + "y" * 500) is None
    names = list(_rejections(container))
    assert len(names) == 1
    assert names[0].startswith("rejected/")
    assert ".." not in names[0]
    assert len(names[0]) < 120
    assert _job_blobs(container) == []


def test_a_huge_field_name_does_not_blow_up_the_rejection_record(make_runtime: RuntimeFactory) -> None:
    runtime = make_runtime()
    container = runtime.blobs.get_container_client(runtime.settings.storage.jobs_container)
    assert runtime.upstream.handle(json.dumps({**VALID, "k" * FIVE_MB: 1}), "huge-key") is None
    sizes = [blob.size for blob in container.list_blobs(name_starts_with="rejected/")]
    assert len(sizes) == 1
    assert sizes[0] < 64 * 1024, f"rejection record is {sizes[0]} bytes"


def test_a_lone_surrogate_in_a_label_is_rejected_not_raised(make_runtime: RuntimeFactory) -> None:
    runtime = make_runtime()
    container = runtime.blobs.get_container_client(runtime.settings.storage.jobs_container)
    text = json.dumps({**VALID, "labels": {"team": "\ud800"}})
    assert runtime.upstream.handle(text, "surrogate") is None
    assert len(_rejections(container)) == 1
    assert _job_blobs(container) == []


# Through the real queue: Azure Storage caps a message at 64 KiB, so the big cases shrink to fit.
QUEUE_CASES: dict[str, str] = {
    name: text for name, text in HOSTILE.items() if len(text.encode()) <= 48 * 1024 and name != "empty"
} | {
    "large-string": json.dumps({**VALID, "workload": "x" * 40_000}),
    "deeply-nested-40k": "[" * 40_000,
}


def _queue_depth(stack: LocalStack, name: str) -> int:
    return int(stack_queue(stack, name).get_queue_properties().approximate_message_count or 0)


def _health(stack: LocalStack) -> int:
    with urllib.request.urlopen(f"{stack.base_url}/api/health", timeout=5) as response:
        return int(response.status)


@pytest.mark.slow
def test_hostile_messages_on_the_real_queue_are_each_rejected_once_and_drain(stack: LocalStack) -> None:
    jobs = stack_container(stack)
    already = set(_rejections(jobs))
    jobs_before = _job_blobs(jobs)
    requests = stack_queue(stack, REQUESTS_QUEUE)
    sent: dict[str, str] = {}
    for name, text in QUEUE_CASES.items():
        sent[requests.send_message(text).id] = name

    def all_rejected() -> bool:
        seen = {record["messageId"] for name, record in _rejections(jobs).items() if name not in already}
        return set(sent) <= seen

    wait_until(all_rejected, 20, f"a rejection for each of {sorted(sent.values())}")
    fresh = {name: record for name, record in _rejections(jobs).items() if name not in already}
    by_message = {record["messageId"]: record for record in fresh.values()}
    for message_id, case in sent.items():
        reason = by_message[message_id]["reason"]
        assert reason, case
        assert "repeated attempts" not in reason, f"{case} was retried to poison: {reason}"
    wait_until(
        lambda: _queue_depth(stack, REQUESTS_QUEUE) == 0 and _queue_depth(stack, REQUESTS_QUEUE + POISON_SUFFIX) == 0,
        15,
        "jobs-requests and its poison queue to drain",
    )
    # Nothing new stored: the shared stack's reconciler may meanwhile fold what earlier tests left (their
    # active/ entries, its capacity board), so the check is on what appeared, not on the container as a whole.
    appeared = set(_job_blobs(jobs)) - set(jobs_before)
    assert not {name for name in appeared if not name.startswith(RECONCILER_OWN)}, appeared
    assert _health(stack) == 200
    assert stack.host is not None
    assert stack.host.process is not None
    assert stack.host.process.poll() is None
