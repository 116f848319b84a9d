"""People who run jobs, in a real browser: submit the demo chain from the form, watch it, see its pictures.

Every step goes through the console's own pages (the public REST API behind them);
the API client is used only to wait and to check what the page shows against the truth.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hastegeo.cli.client import ApiClient
from hastegeo_dev.stack import LocalStack
from tests.browser.conftest import wait_terminal

pytestmark = [pytest.mark.azurite, pytest.mark.slow]
CLASSES = ["water", "vegetation", "bare", "building"]


def submit_from_form(page: Any, workload: str, *, blobs: list[str] = (), jobs: list[str] = (), **params: str) -> str:
    """Fill the generated form and submit; returns the new job's id from the page it lands on."""
    page.goto(f"#/submit?workload={workload}")
    page.get_by_label("Workload").select_option(workload)
    page.get_by_label("Project").fill("demo")
    page.get_by_label("Input blobs").fill("\n".join(blobs))
    page.get_by_label("Input jobs").fill("\n".join(jobs))
    for name, value in params.items():
        field = page.locator(f'[data-field="parameters.{name}"] input, [data-field="parameters.{name}"] select')
        if field.evaluate("node => node.tagName") == "SELECT":
            field.select_option(value)
        else:
            field.fill(value)
    page.get_by_role("button", name="Submit job").click()
    page.wait_for_url("**#/job/*")
    return page.url.rsplit("/", 1)[1]


def wait_shown(page: Any, api: ApiClient, job_id: str) -> dict[str, Any]:
    """Wait for the job to finish, then for the page (which polls) to show that state.

    The heading must name this job: after following a link, the previous job's page
    (whose badge may read the same state) is still shown until the new one renders.
    """
    job = wait_terminal(api, job_id)
    heading = page.locator("h1").filter(has_text=f"Job {job_id}")
    heading.locator(".badge").filter(has_text=job["state"]).wait_for(timeout=15000)
    return job


def test_the_demo_chain_from_the_form_with_every_picture(
    page: Any, api: ApiClient, scene: list[str], shoot: Callable[[Any, str], Path]
) -> None:
    rasters = [name for name in scene if name.endswith(".tif")]
    page.goto("#/submit")
    shoot(page, "submit-form")
    imagery_id = submit_from_form(page, "imagery", blobs=rasters, previewMaxSize="256")
    imagery = wait_shown(page, api, imagery_id)
    assert imagery["state"] == "succeeded", imagery["history"][-3:]
    preview = page.get_by_role("img", name="RGB preview of the mosaic")
    preview.wait_for()
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=preview.element_handle())
    assert preview.evaluate("img => [img.naturalWidth, img.naturalHeight]") == [256, 256]
    # The timeline has a band per event and the sources of the history (progress lines among them).
    assert page.locator("svg.timeline rect.band").count() == len(imagery["history"])
    assert "workload" in {event["source"] for event in imagery["history"]}  # its own progress lines
    page.get_by_text("Status history").click()
    assert page.locator("table.history tbody tr").count() == len(imagery["history"])
    # Outputs with sizes and read URLs.
    row = page.locator("table.outputs tr", has_text="outputs/preview.png")
    assert row.get_by_role("link", name="download").get_attribute("href").startswith("http://127.0.0.1:")
    shoot(page, "job-imagery")

    training_id = submit_from_form(
        page,
        "training",
        blobs=[name for name in scene if name.endswith("labels.geojson") or name.endswith("buildings.geojson")],
        jobs=[imagery_id],
        classes=", ".join(CLASSES),
        iterations="60",
        runInference="true",
    )
    training = wait_shown(page, api, training_id)
    assert training["state"] == "succeeded", training["history"][-3:]
    matrix = page.locator("svg.confusion")
    matrix.wait_for()
    assert matrix.locator("rect.heat").count() == len(CLASSES) ** 2
    cells = [int(text) for text in matrix.locator("text.cell").all_text_contents()]
    assert sum(cells) == training["summary"]["validationSamples"]
    assert page.locator("svg.bars rect.bar").count() == 3 * len(CLASSES)
    shoot(page, "job-training")

    # The follow-on inference job is linked from its parent, and links back.
    follow_on = page.locator("ul.follow-ons a").filter(has_text="").first
    follow_on.wait_for(timeout=30000)
    children = [job for job in api.list("demo") if job.get("parentJobId") == training_id]
    inference = next(job for job in children if job["workload"] == "inference")
    page.locator("ul.follow-ons").get_by_role("link", name=inference["id"]).click()
    final = wait_shown(page, api, inference["id"])
    assert final["state"] == "succeeded", final["history"][-3:]
    assert page.get_by_role("link", name=training_id).count() == 1
    class_map = page.get_by_role("img", name="Class map")
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=class_map.element_handle())
    fractions = page.locator("table.fractions tbody tr")
    fractions.first.wait_for()
    assert fractions.count() == min(50, final["summary"]["buildings"])
    shoot(page, "job-inference")

    embedding_id = submit_from_form(
        page, "embedding", blobs=[name for name in scene if name.endswith("buildings.geojson")], jobs=[imagery_id]
    )
    embedding = wait_shown(page, api, embedding_id)
    assert embedding["state"] == "succeeded", embedding["history"][-3:]
    page.locator("svg.scatter").wait_for()
    assert page.locator("svg.scatter circle.dot").count() == embedding["summary"]["embedded"]
    assert page.get_by_text(f"Matrix {embedding['summary']['buildings']} × 32").count() == 1
    shoot(page, "job-embedding")

    page.goto("#/jobs?project=demo")
    page.locator("table.jobs tbody tr").first.wait_for()
    shoot(page, "jobs")


def test_a_bad_parameter_is_shown_on_its_field(page: Any, shoot: Callable[[Any, str], Path]) -> None:
    page.goto("#/submit?workload=training")
    page.get_by_label("Input blobs").fill("demo/scene/labels.geojson")
    page.locator('[data-field="parameters.classes"] input').fill("water, land")
    page.locator('[data-field="parameters.iterations"] input').fill("0")
    page.get_by_role("button", name="Submit job").click()
    error = page.locator('[data-field="parameters.iterations"] .error')
    error.wait_for()
    assert error.text_content().count("parameters.iterations") == 1
    assert "greater than or equal to 1" in error.text_content()
    iterations = page.locator('[data-field="parameters.iterations"] input')
    assert iterations.get_attribute("aria-invalid") == "true"
    # Announced with the field: first in its description (before the hint), and named as its error message.
    error_id = error.get_attribute("id")
    assert iterations.get_attribute("aria-describedby").split() == [error_id, f"{iterations.get_attribute('id')}-hint"]
    assert iterations.get_attribute("aria-errormessage") == error_id
    assert page.locator('[data-field="parameters.classes"] .error').is_hidden()
    shoot(page, "submit-error")
    # The envelope's fields too: a project id the API refuses; the earlier field is valid again and says so.
    page.get_by_label("Project").fill("Not A Project")
    iterations.fill("5")
    page.get_by_role("button", name="Submit job").click()
    project_error = page.locator('[data-field="projectId"] .error')
    project_error.wait_for()
    assert "projectId" in project_error.text_content()
    assert page.get_by_label("Project").get_attribute("aria-describedby").split()[0] == project_error.get_attribute(
        "id"
    )
    assert iterations.get_attribute("aria-invalid") is None
    assert iterations.get_attribute("aria-errormessage") is None
    assert iterations.get_attribute("aria-describedby") == f"{iterations.get_attribute('id')}-hint"
    shoot(page, "submit-error-project")
    assert page.url.endswith("#/submit?workload=training")  # nothing was submitted


def local_waiting(api: ApiClient) -> str:
    """The local backend's jobs waiting for compute, as the API says (the reconciler's last count)."""
    local = next(backend for backend in api.backends()["backends"] if backend["name"] == "local")
    return str(local["capacity"]["waiting"])


def test_backends_panel(page: Any, api: ApiClient, shoot: Callable[[Any, str], Path]) -> None:
    # The count is the reconciler's, from its last pass (once a minute): a job an earlier test left
    # waiting may still be in it. The panel must show what the API says, before or after the page loaded.
    before = local_waiting(api)
    page.goto("#/backends")
    row = page.locator("table.backends tbody tr", has_text="local")
    row.wait_for()
    assert "imagery" in row.text_content()
    assert row.locator("td").nth(3).text_content() == "yes"  # auto routes to it
    assert row.locator("td").nth(4).text_content() in {before, local_waiting(api)}  # jobs waiting for compute
    assert page.locator("ul li", has_text="azure_batch").count() == 1
    shoot(page, "backends")


def test_the_list_shows_new_jobs_and_their_progress_without_a_reload(
    page: Any, api: ApiClient, console_stack: LocalStack
) -> None:
    from azure.storage.blob import BlobServiceClient

    inputs = BlobServiceClient.from_connection_string(console_stack.azurite.connection_string)
    inputs.get_container_client("haste-inputs").upload_blob("live/small.txt", b"small input", overwrite=True)
    page.goto("#/jobs?project=live")
    page.get_by_text("No jobs.").wait_for()
    job = api.submit({"workload": "artifacts", "projectId": "live", "inputs": [{"blob": "live/small.txt"}]})
    row = page.locator(f"tr[data-job='{job['id']}']")
    row.wait_for(timeout=15000)  # appeared by itself
    assert wait_terminal(api, job["id"])["state"] == "succeeded"
    row.locator(".badge", has_text="succeeded").wait_for(timeout=15000)


def test_every_control_is_labelled_and_reachable_by_keyboard(page: Any) -> None:
    page.goto("#/submit?workload=imagery")
    page.get_by_role("button", name="Submit job").wait_for()
    unlabelled = page.evaluate(
        """() => [...document.querySelectorAll('input, select, textarea, button')]
            .filter(el => !(el.labels && el.labels.length) && !el.textContent.trim() && !el.getAttribute('aria-label'))
            .map(el => el.outerHTML)"""
    )
    assert unlabelled == []
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    reached = set()
    for _ in range(60):
        page.keyboard.press("Tab")
        reached.add(page.evaluate("document.activeElement.id || document.activeElement.textContent"))
    for expected in ("Jobs", "Submit", "Backends", "field-workload", "field-projectId", "field-parameters-sources"):
        assert expected in reached, reached
    assert "Submit job" in reached
