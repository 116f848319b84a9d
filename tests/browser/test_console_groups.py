"""Job groups in the console (ADR 0040): the group page (progress, counts by state, items ended over time,
failed items with their causes, cancel and retry), the jobs list of a group's items, and a job page's
dependencies (what it waits for, what waits for it). Every state shown is checked with axe-core."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from azure.storage.blob import BlobServiceClient

from hastegeo.cli.client import ApiClient
from hastegeo.models.group import Group, GroupRequest, new_group_id
from hastegeo.store.groups import GroupStore
from hastegeo_dev.stack import LocalStack
from tests.browser.conftest import wait_terminal

pytestmark = [pytest.mark.azurite, pytest.mark.slow]


def wait_group(api: ApiClient, group_id: str, timeout: float = 180) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while (group := api.get_group(group_id))["state"] != "completed":
        assert time.monotonic() < deadline, group
        time.sleep(0.3)
    return group


def inputs(console_stack: LocalStack) -> Any:
    service = BlobServiceClient.from_connection_string(console_stack.azurite.connection_string)
    return service.get_container_client("haste-inputs")


def test_a_group_with_a_failed_item_its_chart_its_items_and_what_waits_for_it(
    page: Any, api: ApiClient, console_stack: LocalStack, scene: list[str], shoot: Callable[[Any, str], Path]
) -> None:
    project = f"grp-{uuid.uuid4().hex[:6]}"
    for name in ("a", "b", "c"):
        inputs(console_stack).upload_blob(f"{project}/{name}.txt", f"{name}\n".encode())
    items = [{"inputs": [{"blob": f"{project}/{name}.txt"}]} for name in ("a", "b", "missing", "c")]
    group = api.submit_group({"workload": "artifacts", "projectId": project, "items": items})
    waiting = api.submit(
        {
            "workload": "artifacts",
            "projectId": project,
            "inputs": [{"blob": f"{project}/a.txt"}],
            "after": [group["id"]],
        }
    )
    ended = wait_group(api, group["id"])
    assert ended["counts"]["failed"] == 1

    page.goto(f"#/groups/{group['id']}")
    page.locator("h1 .badge", has_text="completed").wait_for()
    assert page.locator("#group-progress").get_attribute("value") == "4"
    assert page.locator("#group-progress").get_attribute("max") == "4"
    assert page.locator("#group-progress-text").inner_text() == (
        "4 of 4 items ended (100%): 3 succeeded, 1 failed, 0 cancelled"
    )
    assert page.locator("#group-counts tr[data-state='failed'] td").inner_text() == "1"
    assert page.locator("#group-counts tr[data-state='succeeded'] td").inner_text() == "3"
    failure = page.locator("#group-failures tbody tr")
    assert failure.count() == 1
    assert failure.locator("td").nth(1).inner_text() == f"{group['id']}-2"
    assert failure.locator("td.message").inner_text() != "No reason recorded"
    page.locator("#group-chart svg.completions").wait_for()
    assert page.locator("#group-chart path.line").count() == 2  # succeeded and failed
    legend = [text.strip() for text in page.locator("#group-chart .legend li").all_text_contents()]
    assert legend == ["succeeded 3", "failed 1"]
    assert "null" not in page.locator("#group-chart").inner_text()
    assert page.locator("#group-dependents a").all_text_contents() == [waiting["id"]]
    assert page.get_by_role("button", name="Cancel group…").count() == 0
    cost = api.get_group(group["id"])["cost"]  # what its items cost, from the project's totals (issue 41)
    shown = page.locator("dl.facts dt", has_text="cost").locator("xpath=following-sibling::dd[1]").inner_text()
    assert cost is not None
    assert cost["endedItems"] == 4, cost
    assert shown != "–"
    assert (cost["currency"] or "unknown") in shown, shown
    shoot(page, "group-completed-with-a-failure")

    # The jobs list of the group's items, in item order, and a state filter on them.
    page.get_by_role("link", name="Items in the jobs list").click()
    page.locator("h1", has_text="Items of group").wait_for()
    page.locator("#page-where").filter(has_text="4 job(s)").wait_for()
    rows = page.locator("table.jobs tbody tr").evaluate_all("rows => rows.map(row => row.dataset.job)")
    assert rows == [f"{group['id']}-{index}" for index in range(4)]
    shoot(page, "jobs-of-a-group")
    page.goto(f"#/jobs?group={group['id']}&state=failed")
    page.locator("#page-where").filter(has_text="1 job(s)").wait_for()

    # The waiting job ended without running; its page names the group it waited for.
    assert wait_terminal(api, waiting["id"])["state"] == "failed"
    page.goto(f"#/job/{waiting['id']}")
    page.locator("#job-after a", has_text=group["id"]).wait_for()
    assert page.locator("#job-after .badge").inner_text() == "did not succeed"
    assert "upstream group" in page.locator("#job-reason").inner_text()
    shoot(page, "job-waited-for-a-group")

    # An item's page links to its group.
    page.goto(f"#/job/{group['id']}-0")
    page.locator("#job-group a", has_text=group["id"]).wait_for()

    # Retry from the group page: the missing input exists now, so the item succeeds this time.
    inputs(console_stack).upload_blob(f"{project}/missing.txt", b"here now\n")
    page.goto(f"#/groups/{group['id']}")
    page.get_by_role("button", name="Retry failed and cancelled items").click()
    page.locator("#group-progress-text").filter(has_text="4 succeeded").wait_for(timeout=120_000)
    assert api.get_group(group["id"])["counts"]["succeeded"] == 4
    shoot(page, "group-retried")


def test_a_job_page_shows_what_it_waits_for_and_what_waits_for_it(
    page: Any, api: ApiClient, scene: list[str], shoot: Callable[[Any, str], Path]
) -> None:
    upstream = api.submit({"workload": "artifacts", "projectId": "demo", "inputs": [{"blob": scene[0]}]})
    downstream = api.submit(
        {"workload": "artifacts", "projectId": "demo", "inputs": [{"jobId": upstream["id"]}], "after": [upstream["id"]]}
    )
    page.goto(f"#/job/{upstream['id']}")
    page.locator("#job-dependents a", has_text=downstream["id"]).wait_for()
    shoot(page, "job-waited-for")
    assert wait_terminal(api, downstream["id"])["state"] == "succeeded"
    page.goto(f"#/job/{downstream['id']}")
    page.locator("#job-after .badge", has_text="succeeded").wait_for()
    assert page.locator("#job-after a").all_text_contents() == [upstream["id"]]
    page.locator("#job-dependents-none").wait_for()
    shoot(page, "job-waits-for")


def test_cancel_a_group_from_its_page_then_retry_it(
    page: Any, api: ApiClient, console_stack: LocalStack, shoot: Callable[[Any, str], Path]
) -> None:
    """A group whose items are not made yet (stored, its make message not sent): the cancel is seen at once."""
    project = f"grc-{uuid.uuid4().hex[:6]}"
    inputs(console_stack).upload_blob(f"{project}/a.txt", b"a\n")
    request = GroupRequest.model_validate(
        {"workload": "artifacts", "projectId": project, "inputs": [{"blob": f"{project}/a.txt"}], "items": [{}] * 3}
    )
    now = datetime.now(UTC)
    group = Group(
        id=new_group_id(),
        project_id=project,
        workload="artifacts",
        item_count=3,
        marks="...",
        created_at=now,
        updated_at=now,
    )
    service = BlobServiceClient.from_connection_string(console_stack.azurite.connection_string)
    assert GroupStore(service.get_container_client("haste-jobs")).create(group, request) is not None

    page.goto(f"#/groups/{group.id}")
    page.locator("h1 .badge", has_text="open").wait_for()
    page.locator("#completions-none").wait_for()
    shoot(page, "group-open")
    page.get_by_role("button", name="Cancel group…").click()
    page.get_by_role("dialog").wait_for()
    shoot(page, "group-cancel-confirm")
    page.get_by_role("button", name="Cancel the group").click()
    page.locator("h1 .badge", has_text="completed").wait_for(timeout=60_000)
    assert page.locator("#group-counts tr[data-state='cancelled'] td").inner_text() == "3"
    assert page.locator("#group-failures td.message").all_text_contents() == ["cancelled before it was made"] * 3
    shoot(page, "group-cancelled")
    page.get_by_role("button", name="Retry failed and cancelled items").click()
    page.locator("#group-progress-text").filter(has_text="3 succeeded").wait_for(timeout=120_000)
    assert [job["state"] for job in api.group_jobs(group.id)] == ["succeeded"] * 3
