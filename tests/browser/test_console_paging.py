"""Many jobs, a running job, and data that looks like markup: paging, filters, cancel, text stays text."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from azure.storage.blob import BlobServiceClient

from hastegeo.cli.client import ApiClient
from hastegeo.models.job import Job
from hastegeo.store.jobs import JobStore
from hastegeo_dev.stack import LocalStack
from tests.browser.conftest import finished_job, wait_terminal

pytestmark = [pytest.mark.azurite, pytest.mark.slow]
PROJECT = "paging"
SEEDED = 120
MARKUP = "<img src=x onerror=\"document.title='owned'\"><b>bold</b>"


def _job(index: int, start: datetime) -> Job:
    failed = index % 10 == 0
    reason = f"the imagery has no valid pixel (job {index})" if failed else None
    labels = {"note": MARKUP} if index == 7 else {"n": str(index)}
    return finished_job(f"seeded-{index:03d}", PROJECT, start + timedelta(seconds=index), reason, labels, "artifacts")


@pytest.fixture(scope="module")
def seeded(console_stack: LocalStack) -> Iterator[list[str]]:
    """120 finished jobs written straight into the job store (cheap: no compute), newest last."""
    container = BlobServiceClient.from_connection_string(console_stack.azurite.connection_string).get_container_client(
        "haste-jobs"
    )
    store = JobStore(container)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    jobs = [_job(index, start) for index in range(SEEDED)]
    for job in jobs:
        assert store.create(job)
    return [job.id for job in reversed(jobs)]


def _rows(page: Any) -> list[str]:
    page.locator("#page-where").filter(has_text="job(s)").wait_for()
    return page.locator("table.jobs tbody tr").evaluate_all("rows => rows.map(row => row.dataset.job)")


def test_paging_through_120_jobs_newest_first(page: Any, seeded: list[str], shoot: Callable[[Any, str], Path]) -> None:
    page.goto(f"#/jobs?project={PROJECT}")
    seen: list[str] = []
    for number in range(1, 4):
        page.locator("#page-where").filter(has_text=f"page {number},").wait_for()
        seen += _rows(page)
        if number == 1:
            shoot(page, "jobs-paging")
            assert page.locator("#page-previous").is_disabled()
        if number < 3:
            page.locator("#page-next").click()
    assert seen == seeded
    assert page.locator("#page-next").is_disabled()
    page.locator("#page-previous").click()
    page.locator("#page-where").filter(has_text="page 2,").wait_for()
    assert _rows(page) == seeded[50:100]


def test_a_page_is_turned_only_once_the_page_before_it_has_loaded(page: Any, seeded: list[str]) -> None:
    page.goto(f"#/jobs?project={PROJECT}")
    page.locator("#page-where").filter(has_text="page 1,").wait_for()
    held: list[Any] = []
    page.route("**/api/jobs?*continuationToken=*", lambda route: held.append(route))
    page.locator("#page-next").click()
    for _ in range(200):
        if held:
            break
        page.wait_for_timeout(25)
    assert held, "the second page was never asked for"
    # While page 2 loads, page 3's token is unknown: a second click must not skip ahead.
    assert page.locator("#page-next").is_disabled()
    assert page.locator("#page-previous").is_disabled()
    held[0].continue_()
    page.unroute("**/api/jobs?*continuationToken=*")
    page.locator("#page-where").filter(has_text="page 2,").wait_for()
    assert _rows(page) == seeded[50:100]
    page.locator("#page-next").click()
    page.locator("#page-where").filter(has_text="page 3,").wait_for()
    assert _rows(page) == seeded[100:]


def test_state_filter(page: Any, seeded: list[str]) -> None:
    page.goto(f"#/jobs?project={PROJECT}")
    page.get_by_label("State").select_option("failed")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url("**state=failed")
    page.locator("#page-where").filter(has_text="12 job(s)").wait_for()
    assert _rows(page) == [job_id for job_id in seeded if int(job_id.split("-")[1]) % 10 == 0]


def test_a_label_with_markup_stays_text(page: Any, seeded: list[str], shoot: Callable[[Any, str], Path]) -> None:
    page.goto(f"#/jobs?project={PROJECT}&state=succeeded")
    page.locator("#page-where").filter(has_text="job(s)").wait_for()
    while page.locator("tr[data-job='seeded-007']").count() == 0:
        page.locator("#page-next").click()
        page.wait_for_timeout(200)
    cell = page.locator("tr[data-job='seeded-007'] td.labels")
    assert cell.text_content() == f"note={MARKUP}"
    assert page.locator("table.jobs img, table.jobs b").count() == 0
    page.get_by_role("link", name="seeded-007").click()
    page.locator("dl.facts dd", has_text="note=").wait_for()
    assert page.locator("dl.facts dd", has_text="note=").text_content() == f"note={MARKUP}"
    assert page.locator("main img, main b").count() == 0
    assert "owned" not in page.title()
    shoot(page, "job-markup-label")


def test_a_failed_job_shows_its_readable_reason(page: Any, seeded: list[str]) -> None:
    page.goto("#/job/seeded-030")
    reason = page.locator("#job-reason")
    reason.wait_for()
    assert reason.text_content() == "the imagery has no valid pixel (job 30)"
    assert page.locator("#cancel-job").count() == 0  # nothing to cancel


def test_cancel_a_running_job_after_confirming(
    page: Any, api: ApiClient, scene: list[str], shoot: Callable[[Any, str], Path]
) -> None:
    rasters = [{"blob": name} for name in scene if name.endswith(".tif")]
    imagery = api.submit({"workload": "imagery", "projectId": "demo", "inputs": rasters})
    assert wait_terminal(api, imagery["id"])["state"] == "succeeded"
    # Many iterations: long enough to be caught running.
    long = api.submit(
        {
            "workload": "training",
            "projectId": "demo",
            "inputs": [{"jobId": imagery["id"]}, *({"blob": n} for n in scene if n.endswith("labels.geojson"))],
            "parameters": {"classes": ["water", "vegetation", "bare", "building"], "iterations": 100000},
        }
    )
    page.goto(f"#/job/{long['id']}")
    page.locator("h1 .badge").filter(has_text="running").wait_for(timeout=60000)
    page.locator("#cancel-job").click()
    dialog = page.get_by_role("dialog")
    assert "Work in progress is lost" in dialog.text_content()
    shoot(page, "job-cancel-confirm")
    # Asked again after the audit (which takes seconds, long enough for a poll to redraw the page): the
    # keyboard checks below start from a dialog just opened from the button.
    dialog.get_by_role("button", name="Keep it").click()
    page.locator("#cancel-job").click()
    dialog.get_by_role("button", name="Keep it").wait_for()
    page.keyboard.press("Escape")  # Escape says no
    assert dialog.is_hidden()
    # The focus goes back to the button (found again by id if a poll redrew the page meanwhile).
    page.wait_for_function("() => document.activeElement && document.activeElement.id === 'cancel-job'", timeout=5000)
    page.keyboard.press("Enter")  # the button still has the focus: the dialog opens again
    dialog.get_by_role("button", name="Keep it").click()  # saying no changes nothing
    assert api.get(long["id"])["state"] == "running"
    page.locator("#cancel-job").click()
    page.get_by_role("dialog").get_by_role("button", name="Cancel the job").click()
    final = wait_terminal(api, long["id"], timeout=60)
    assert final["state"] == "cancelled"
    page.locator("h1 .badge").filter(has_text="cancelled").wait_for(timeout=15000)
    assert page.locator("#job-reason").is_visible()
    shoot(page, "job-cancelled")


def _heading(page: Any, job_id: str) -> Any:
    return page.locator("h1").filter(has_text=f"Job {job_id}")


def test_a_page_left_while_it_loads_never_replaces_the_next_one(page: Any, seeded: list[str]) -> None:
    first, second = seeded[0], seeded[1]
    held: list[Any] = []
    # The first job's answer waits until the test releases it.
    page.route(f"**/api/jobs/{first}?*", lambda route: held.append(route))
    page.goto(f"#/job/{first}")
    for _ in range(200):
        if held:
            break
        page.wait_for_timeout(25)
    assert held, "the first job's page never asked for the job"
    page.goto(f"#/job/{second}")
    _heading(page, second).wait_for()
    with page.expect_response(lambda response: f"/api/jobs/{first}?" in response.url):
        held[0].continue_()  # the page that was left gets its answer now
    page.evaluate("() => new Promise(resolve => setTimeout(resolve, 200))")  # its rendering, had it any
    assert page.locator("h1").all_text_contents() == [f"Job {second} succeeded"]
    assert page.url.endswith(f"#/job/{second}")


def test_the_skip_link_moves_the_focus_and_keeps_the_page(page: Any, seeded: list[str]) -> None:
    page.goto(f"#/job/{seeded[0]}")
    _heading(page, seeded[0]).wait_for()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "main"
    assert page.url.endswith(f"#/job/{seeded[0]}")
    assert page.locator("h1").all_text_contents()[0].startswith(f"Job {seeded[0]}")
