"""Retry from the console: a failed job's page offers Retry, which opens the new job linked to the old one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hastegeo.cli.client import ApiClient
from hastegeo.cli.main import main
from hastegeo_dev.stack import LocalStack
from tests.browser.conftest import wait_terminal

pytestmark = [pytest.mark.azurite, pytest.mark.slow]


def failed_job(api: ApiClient) -> dict[str, Any]:
    """A job that fails at once: its input blob does not exist."""
    job = api.submit({"workload": "artifacts", "projectId": "demo", "inputs": [{"blob": "demo/missing-for-retry.txt"}]})
    ended = wait_terminal(api, job["id"])
    assert ended["state"] == "failed", ended["history"][-2:]
    return ended


def test_retry_a_failed_job_from_its_page(page: Any, api: ApiClient, shoot: Callable[[Any, str], Path]) -> None:
    old = failed_job(api)
    page.goto(f"#/job/{old['id']}")
    page.locator("h1").filter(has_text=f"Job {old['id']}").locator(".badge").filter(has_text="failed").wait_for()
    assert page.get_by_role("button", name="Cancel job…").count() == 0
    shoot(page, "job-failed-retry")
    page.get_by_role("button", name="Retry job").click()
    page.wait_for_url(lambda url: old["id"] not in url and "#/job/" in url)
    new_id = page.url.rsplit("/", 1)[1]
    page.locator("#retry-of a").filter(has_text=old["id"]).wait_for()
    assert api.get(new_id)["retryOf"] == old["id"]
    assert api.get(old["id"])["retries"] == [new_id]
    # Back on the old job, its retry is listed; the new job (it fails the same way) offers Retry in turn.
    page.goto(f"#/job/{old['id']}")
    page.locator("#retries a").filter(has_text=new_id).wait_for()
    assert wait_terminal(api, new_id)["state"] == "failed"


def test_a_succeeded_job_offers_no_retry(page: Any, api: ApiClient, scene: list[str]) -> None:
    job = api.submit({"workload": "artifacts", "projectId": "demo", "inputs": [{"blob": scene[0]}]})
    assert wait_terminal(api, job["id"])["state"] == "succeeded"
    page.goto(f"#/job/{job['id']}")
    page.locator("h1").filter(has_text=f"Job {job['id']}").locator(".badge").filter(has_text="succeeded").wait_for()
    assert page.get_by_role("button", name="Retry job").count() == 0


def test_haste_retry(console_stack: LocalStack, api: ApiClient, capsys: pytest.CaptureFixture[str]) -> None:
    old = failed_job(api)
    assert main(["--url", console_stack.base_url, "-o", "table", "retry", old["id"], "--idempotency-key", "cli-1"]) == 0
    printed = capsys.readouterr().out
    new_id = printed.split(":", 1)[0]
    assert printed.strip() == f"{new_id}: queued (retry of {old['id']})"
    assert main(["--url", console_stack.base_url, "-o", "table", "retry", old["id"], "--idempotency-key", "cli-1"]) == 0
    assert capsys.readouterr().out.split(":", 1)[0] == new_id  # the same key, the same retry
    assert api.get(old["id"])["retries"] == [new_id]
