"""A project's costs in the console: a chart per day by backend or workload with its table, and a job's cost."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from azure.storage.blob import BlobServiceClient

from hastegeo.cli.client import ApiClient
from hastegeo_dev.stack import LocalStack
from tests.browser.conftest import wait_terminal

pytestmark = [pytest.mark.azurite, pytest.mark.slow]


def test_a_projects_costs_by_day_and_a_jobs_cost(
    page: Any, api: ApiClient, console_stack: LocalStack, shoot: Callable[[Any, str], Path]
) -> None:
    blobs = BlobServiceClient.from_connection_string(console_stack.azurite.connection_string)
    blobs.get_container_client("haste-inputs").upload_blob("costs/a.txt", b"alpha", overwrite=True)
    request = {"workload": "artifacts", "projectId": "costs", "inputs": [{"blob": "costs/a.txt"}]}
    job = wait_terminal(api, api.submit(request)["id"])
    assert job["state"] == "succeeded", job.get("reason")
    amount = job["cost"]["amount"]
    assert amount is not None

    page.goto("#/costs?project=costs")
    page.get_by_role("img", name=re.compile(r"^Cost per day by backend, 1 days")).wait_for()
    day = job["finishedAt"][:10]
    row = page.locator("table.costs tbody tr", has=page.locator("th", has_text=day))
    assert row.locator("td").first.text_content() == page.evaluate(
        "async (amount) => (await import('./costs.js')).cents(amount)", amount
    )
    assert page.locator("table.costs thead th").all_text_contents() == ["day", "local", "total", "jobs", "unpriced"]
    assert "for 1 job(s)" in (page.locator("#costs-total").text_content() or "")
    shoot(page, "costs-by-backend")

    page.get_by_label("By", exact=True).select_option("workload")
    page.get_by_role("button", name="Show").click()
    page.get_by_role("img", name=re.compile(r"^Cost per day by workload")).wait_for()
    assert "artifacts" in page.locator("table.costs thead th").all_text_contents()
    shoot(page, "costs-by-workload")

    page.goto(f"#/job/{job['id']}")
    cost = page.locator("dl.facts dt", has_text="cost").locator("xpath=following-sibling::dd[1]")
    cost.wait_for()
    assert re.fullmatch(r"\d+\.\d\d USD", cost.text_content() or ""), cost.text_content()
    shoot(page, "job-with-cost")


def test_a_bad_range_says_which_field(page: Any, shoot: Callable[[Any, str], Path]) -> None:
    page.goto("#/costs?project=costs&from=2026-12-31&to=2026-12-01")
    alert = page.get_by_role("alert")
    alert.wait_for()
    assert "from: must not be after 'to'" in (alert.text_content() or "")
    shoot(page, "costs-bad-range")
