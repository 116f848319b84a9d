"""``haste group`` as a user runs it (the installed command, a subprocess) against the development stack:
a group submitted from a CSV file and followed with its progress bar to the end, one with a failed item
retried once its input exists, one cancelled, the JSON output exactly the API's body, and the refusals
with their documented exit codes."""

from __future__ import annotations

import json
import random
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from azure.storage.blob import BlobServiceClient

from hastegeo.cli.client import ApiClient
from hastegeo.cli.exits import ExitCode
from hastegeo_dev.stack import LocalStack
from tests.e2e.test_cli_installed import haste, no_traceback

pytestmark = [pytest.mark.azurite, pytest.mark.slow]


@pytest.fixture(scope="module")
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("elsewhere")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    settings = {"HASTE_POLL_INITIAL_S": "1", "HASTE_POLL_MAX_S": "2"}
    with LocalStack(tmp_path_factory.mktemp("stack"), settings=settings) as running:
        inputs = BlobServiceClient.from_connection_string(running.azurite.connection_string)
        container = inputs.get_container_client("haste-inputs")
        for name in ("a", "b", "c"):
            container.upload_blob(f"p1/{name}.txt", f"tile {name}\n".encode() * 100)
        # Random bytes do not compress: zipping them takes long enough for a cancel to catch the items.
        container.upload_blob("p1/large.bin", random.Random(7).randbytes(32 * 1024 * 1024))
        yield running


def inputs_container(stack: LocalStack) -> object:
    return BlobServiceClient.from_connection_string(stack.azurite.connection_string).get_container_client(
        "haste-inputs"
    )


def run(stack: LocalStack, outside: Path, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    result = haste(*args, url=stack.base_url, cwd=outside, timeout=timeout)
    no_traceback(result)
    return result


def test_a_csv_group_is_followed_with_a_progress_bar_to_the_end(stack: LocalStack, outside: Path) -> None:
    items = outside / "tiles.csv"
    items.write_text("input,label.tile\nblob:p1/a.txt,a\nblob:p1/b.txt,b\nblob:p1/c.txt,c\n")
    result = run(
        stack, outside, "group", "submit", "--file", str(items), "--workload", "artifacts", "--project", "p1",
        "--param", "compressLevel=1", "--watch", "--interval", "0.3", "-o", "table",
    )  # fmt: skip
    assert result.returncode == ExitCode.OK, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    group_id = lines[0].split(":")[0]
    assert lines[0] == f"{group_id}: 3 items"
    bars = [line for line in lines if line.startswith("[")]  # piped: one line each time the counts changed
    assert bars[-1] == "[" + "=" * 30 + "] 3/3 ended  3 succeeded"
    assert len(bars) >= 2
    assert f"group {group_id}  artifacts  project p1  state: completed" in result.stdout

    api = ApiClient(stack.base_url)
    jobs = list(api.group_jobs(group_id))
    assert [job["labels"] for job in jobs] == [{"tile": "a"}, {"tile": "b"}, {"tile": "c"}]
    assert {job["state"] for job in jobs} == {"succeeded"}
    assert all(job["parameters"] == {"compressLevel": 1} for job in jobs)

    got = run(stack, outside, "group", "get", group_id, "--output", "json")
    assert got.returncode == 0
    assert json.loads(got.stdout) == api.get_group(group_id)
    listed = run(stack, outside, "group", "items", group_id, "-o", "json")
    assert [json.loads(line)["id"] for line in listed.stdout.splitlines()] == [job["id"] for job in jobs]
    table = run(stack, outside, "group", "get", group_id, "-o", "table")
    assert "[" + "=" * 30 + "] 3/3 ended  3 succeeded" in table.stdout


def test_a_failed_item_fails_the_watch_and_a_retry_makes_only_it_again(stack: LocalStack, outside: Path) -> None:
    items = outside / "items.json"
    items.write_text(json.dumps([{"inputs": [{"blob": "p1/a.txt"}]}, {"inputs": [{"blob": "p1/later.txt"}]}]))
    submitted = run(
        stack, outside, "group", "submit", "--file", str(items), "--workload", "artifacts", "--project", "p1",
        "--watch", "--interval", "0.3", "-o", "json",
    )  # fmt: skip
    assert submitted.returncode == ExitCode.JOB_FAILED, submitted.stdout + submitted.stderr
    group = json.loads(submitted.stdout)  # JSON: the final group only, no progress on a pipe
    assert group["counts"]["succeeded"] == 1
    assert group["counts"]["failed"] == 1
    (failure,) = group["failures"]
    assert failure["index"] == 1
    assert failure["reason"]

    inputs_container(stack).upload_blob("p1/later.txt", b"here now\n")  # type: ignore[attr-defined]
    retried = run(stack, outside, "group", "retry", group["id"], "--watch", "--interval", "0.3", "-o", "table")
    assert retried.returncode == ExitCode.OK, retried.stdout + retried.stderr
    assert retried.stdout.splitlines()[0] == f"{group['id']}: 1 item(s) made again"
    jobs = list(ApiClient(stack.base_url).group_jobs(group["id"]))
    assert [job["id"] for job in jobs] == [f"{group['id']}-0", f"{group['id']}-1-r1"]
    again = run(stack, outside, "group", "retry", group["id"])
    assert again.returncode == ExitCode.REFUSED
    assert "(HTTP 409)" in again.stderr


def test_a_cancelled_group_exits_3_when_followed(stack: LocalStack, outside: Path) -> None:
    items = outside / "large.json"
    items.write_text(json.dumps({"inputs": [{"blob": "p1/large.bin"}], "items": [{}, {}, {}, {}]}))
    submitted = run(
        stack, outside, "group", "submit", "--file", str(items), "--workload", "artifacts", "--project", "p1"
    )
    assert submitted.returncode == 0
    group_id = json.loads(submitted.stdout)["id"]
    cancelled = run(stack, outside, "group", "cancel", group_id, "-o", "table")
    assert (cancelled.returncode, cancelled.stdout.strip()) == (0, f"{group_id}: cancelling")
    watched = run(stack, outside, "group", "watch", group_id, "--interval", "0.3", "-o", "json")
    assert watched.returncode == ExitCode.JOB_CANCELLED, watched.stdout + watched.stderr
    final = json.loads(watched.stdout)
    assert final["state"] == "completed"
    assert final["counts"]["cancelled"] >= 1
    assert final["counts"]["failed"] == 0


def test_refusals_name_the_item_field_and_exit_as_documented(stack: LocalStack, outside: Path) -> None:
    items = outside / "bad.json"
    items.write_text(json.dumps([{}, {"parameters": {"compressLevel": 42}}]))
    refused = run(
        stack, outside, "group", "submit", "--file", str(items), "--workload", "artifacts", "--project", "p1",
        "--input", "blob:p1/a.txt",
    )  # fmt: skip
    assert refused.returncode == ExitCode.REFUSED
    assert "items[1].parameters.compressLevel" in refused.stderr
    missing = run(stack, outside, "group", "get", "gnosuchgroup0000")
    assert missing.returncode == ExitCode.NOT_FOUND
    assert "Group not found (HTTP 404)" in missing.stderr
