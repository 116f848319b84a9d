"""Everything the stack writes — host log, job store, queues, local backend files — holds no secret.

A small run on the shared LocalStack: a job that succeeds, one that fails, one cancelled, an upstream message
carrying a fake SAS URL, bearer token and JWT (rejected), and an API request with a fake connection string in a
label. Then every written byte is scanned. The host's *environment* holds Azurite's connection string by design;
only what is written is scanned.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from azure.storage.blob import BlobServiceClient
from azure.storage.queue import QueueServiceClient

from hastegeo.cli.client import TERMINAL, ApiClient, ApiError
from hastegeo_dev.devhost.azurite import ACCOUNT_KEY
from hastegeo_dev.stack import LocalStack
from tests.security.conftest import STACK_INPUTS_CONTAINER, stack_container, stack_queue, wait_until

pytestmark = [pytest.mark.azurite, pytest.mark.slow]

FAKE_SIG = "FAKEsig%2Bvalue"
FAKE_SAS_URL = f"https://fakeacct.blob.core.windows.net/in/a.tif?sv=2024-11-04&se=2030-01-01&sp=r&sig={FAKE_SIG}"
FAKE_BEARER = "FAKEbearerTOKEN0123456789abcdef"
FAKE_JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJGQUtFIn0.FAKEjwtSIGNATUREabc123"
FAKE_ACCOUNT_KEY = "FAKEaccountKEY0123456789abcdefghijklmnopqrstuv=="
FAKE_CONNECTION_STRING = (
    f"DefaultEndpointsProtocol=https;AccountName=fakeacct;AccountKey={FAKE_ACCOUNT_KEY};EndpointSuffix=core.windows.net"
)
PLANTED = [FAKE_SIG, "FAKEsig+value", FAKE_BEARER, FAKE_JWT, "FAKEjwtSIGNATURE", FAKE_ACCOUNT_KEY]

PATTERNS: dict[str, re.Pattern[str]] = {
    "sas-signature": re.compile(r"(?i)(?<![A-Za-z0-9_])sig=(?!\[REDACTED\])[^&\s\"'<>\\]+"),
    "account-key": re.compile(r"(?i)AccountKey=(?!\[REDACTED\])[^;\s\"'\\]+"),
    "azurite-key": re.compile(re.escape(ACCOUNT_KEY)),
    "azurite-key-prefix": re.compile(re.escape(ACCOUNT_KEY[:24])),
    "bearer-token": re.compile(r"(?i)\bBearer\s+(?!\[REDACTED\])[A-Za-z0-9\-._~+/]{8,}"),
    "jwt": re.compile(r"\beyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+"),
    **{f"planted:{secret[:12]}": re.compile(re.escape(secret)) for secret in PLANTED},
}


@dataclass
class Corpus:
    """Everything the stack wrote, as (where, text) pairs, and how many of each kind were read."""

    items: list[tuple[str, str]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    job_ids: dict[str, str] = field(default_factory=dict)

    def add(self, kind: str, where: str, text: str) -> None:
        self.items.append((where, text))
        self.counts[kind] = self.counts.get(kind, 0) + 1

    def hits(self, skip: set[str] | None = None) -> list[str]:
        found = []
        for where, text in self.items:
            for name, pattern in PATTERNS.items():
                if skip and name in skip:
                    continue
                for match in pattern.finditer(text):
                    found.append(f"{name} in {where}: …{text[max(0, match.start() - 40) : match.end() + 20]!r}…")
        return found

    def summary(self) -> str:
        size = sum(len(text) for _, text in self.items)
        return f"scanned {dict(sorted(self.counts.items()))} ({size} characters)"


def _wait_terminal(client: ApiClient, job_ids: list[str], timeout: float) -> dict[str, dict[str, Any]]:
    finals: dict[str, dict[str, Any]] = {}

    def done() -> bool:
        for job_id in job_ids:
            if job_id not in finals:
                job = client.get(job_id)
                if job["state"] in TERMINAL:
                    finals[job_id] = job
        return len(finals) == len(job_ids)

    wait_until(done, timeout, f"jobs {job_ids} to end")
    return finals


def _run_scenario(stack: LocalStack) -> dict[str, str]:
    blobs = BlobServiceClient.from_connection_string(stack.azurite.connection_string)
    blobs.get_container_client(STACK_INPUTS_CONTAINER).upload_blob("sec/small.txt", b"small input", overwrite=True)
    client = ApiClient(stack.base_url)
    ids: dict[str, str] = {}
    request = {"workload": "artifacts", "projectId": "sec", "inputs": [{"blob": "sec/small.txt"}]}
    ids["succeeds"] = client.submit(request, idempotency_key="sec-ok")["id"]
    ids["fails"] = client.submit({**request, "inputs": [{"blob": "sec/missing.tif"}]}, idempotency_key="sec-bad")["id"]
    ids["cancelled"] = client.submit(request, idempotency_key="sec-cancel")["id"]
    client.cancel(ids["cancelled"])
    labelled = {**request, "labels": {"conn": FAKE_CONNECTION_STRING, "auth": f"Bearer {FAKE_BEARER}"}}
    try:
        ids["labelled"] = client.submit(labelled, idempotency_key="sec-label")["id"]
    except ApiError as exc:  # rejecting a credential-shaped label is an acceptable answer, a 5xx is not
        if exc.status != 400:
            raise
    hostile = {
        "workload": "artifacts",
        "projectId": "sec",
        "inputs": [{"blob": FAKE_SAS_URL}],
        "labels": {"authorization": f"Bearer {FAKE_BEARER}", "token": FAKE_JWT},
        "parameters": {"url": FAKE_SAS_URL},
    }
    message_id = stack_queue(stack, "jobs-requests").send_message(json.dumps(hostile)).id
    jobs = stack_container(stack)

    def rejected() -> bool:
        for blob in jobs.list_blobs(name_starts_with="rejected/"):
            if json.loads(jobs.download_blob(blob.name).readall()).get("messageId") == message_id:
                return True
        return False

    wait_until(rejected, 20, "the upstream message with a SAS URL to be rejected")
    finals = _wait_terminal(client, list(ids.values()), 45)
    assert finals[ids["succeeds"]]["state"] == "succeeded", finals[ids["succeeds"]]
    assert finals[ids["fails"]]["state"] == "failed", finals[ids["fails"]]
    assert finals[ids["cancelled"]]["state"] == "cancelled", finals[ids["cancelled"]]
    time.sleep(1)  # let the host finish writing its log lines for the last steps
    return ids


def _is_workload_data(path: Path, local_root: Path) -> bool:
    """The workloads' own staged inputs and produced outputs (their content is the user's business)."""
    parts = path.relative_to(local_root).parts
    return "inputs" in parts or "outputs" in parts


def _collect(stack: LocalStack) -> Corpus:
    corpus = Corpus()
    corpus.add("host-log", "host.log", (stack.workdir / "host.log").read_text(encoding="utf-8", errors="replace"))
    blobs = BlobServiceClient.from_connection_string(stack.azurite.connection_string)
    for blob in stack_container(stack).list_blobs():
        data = stack_container(stack).download_blob(blob.name).readall()
        corpus.add(
            f"jobs-container:{blob.name.split('/', 1)[0]}", f"haste-jobs/{blob.name}", data.decode(errors="replace")
        )
    for container in blobs.list_containers():
        if container.name in {"haste-jobs", STACK_INPUTS_CONTAINER}:
            continue
        client = blobs.get_container_client(container.name)
        for blob in client.list_blobs():
            if "/outputs/" in f"/{blob.name}":
                continue  # the workload's own outputs
            text = client.download_blob(blob.name).readall().decode(errors="replace")
            corpus.add(f"blob:{container.name}", f"{container.name}/{blob.name}", text)
    queues = QueueServiceClient.from_connection_string(stack.azurite.connection_string)
    for queue in queues.list_queues():
        corpus.add("queue", queue.name, "")
        for message in queues.get_queue_client(queue.name).peek_messages(max_messages=32):
            corpus.add("queue-message", f"queue {queue.name}", str(message.content))
    local_root = stack.workdir / "local"
    for path in sorted(local_root.rglob("*")):
        if path.is_file() and not _is_workload_data(path, local_root):
            corpus.add("local-file", str(path.relative_to(stack.workdir)), path.read_text(errors="replace"))
    return corpus


@pytest.fixture(scope="module")
def scanned(stack: LocalStack) -> Corpus:
    ids = _run_scenario(stack)
    corpus = _collect(stack)
    corpus.job_ids = ids
    return corpus


def test_the_scan_actually_read_what_the_stack_wrote(scanned: Corpus) -> None:
    assert scanned.counts.get("host-log") == 1
    assert scanned.counts.get("jobs-container:jobs", 0) >= 3, scanned.summary()
    assert scanned.counts.get("jobs-container:rejected", 0) >= 1, scanned.summary()
    assert scanned.counts.get("local-file", 0) >= 3, scanned.summary()
    assert scanned.counts.get("queue", 0) >= 3, scanned.summary()
    # The patterns do fire on the raw secrets, so a clean scan means something.
    probe = Corpus()
    planted = f"{FAKE_SAS_URL} FAKEsig+value Bearer {FAKE_BEARER} {FAKE_JWT} {FAKE_CONNECTION_STRING} {ACCOUNT_KEY}"
    probe.add("probe", "probe", planted)
    fired = {hit.split(" in ", 1)[0] for hit in probe.hits()}
    assert fired == set(PATTERNS), set(PATTERNS) - fired


def test_nothing_the_stack_wrote_holds_a_signature_key_token_or_planted_secret(scanned: Corpus) -> None:
    hits = scanned.hits()
    assert hits == [], f"{len(hits)} leak(s); {scanned.summary()}:\n" + "\n".join(hits[:30])


def test_a_credential_in_a_client_label_is_refused_at_the_door(scanned: Corpus) -> None:
    assert "labelled" not in scanned.job_ids, "a request carrying a connection string was stored"
