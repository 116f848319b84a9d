"""A job's output on its page (logs.js): followed by offset while the job runs, then the real thing after it ended.

The first test plays the API's logs route for a real job (Playwright answers it part by part, as a running
job's log grows), so what the viewer does with each answer is seen exactly: it asks from the offset it was
given, shows every line once and as text, and stops when told the log ended. The second reads a real failed
job's stderr from the development stack, through the API, its blob copy answering after the local files
are gone.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from azure.storage.blob import BlobServiceClient

from hastegeo.cli.client import ApiClient
from hastegeo.settings.load import load_settings
from hastegeo_dev.stack import LocalStack
from tests.browser.conftest import wait_terminal

pytestmark = [pytest.mark.azurite, pytest.mark.slow]
MARKUP = '<img src=x id="injected">'


def scripted_log(job_id: str) -> tuple[Callable[[Any], None], list[tuple[str, int]]]:
    """A route handler answering the logs route as a running job's growing stdout would; and the reads it saw."""
    parts = {
        0: ("line 1\nline 2\n", 14, False, "running"),
        14: (f"AccountKey=[REDACTED]\n{MARKUP}\n", 14 + 22 + len(MARKUP) + 1, False, "running"),
    }
    end = parts[14][1]
    asked: list[tuple[str, int]] = []
    quiet = {"left": 2}  # the running job prints nothing for two reads, then its last line and it ends

    def answer(route: Any) -> None:
        query = parse_qs(urlsplit(route.request.url).query)
        stream, offset = query["stream"][0], int(query["offset"][0])
        asked.append((stream, offset))
        if stream == "stderr":
            text, next_offset, ended, state = "", 0, False, "running"
        elif offset in parts:
            text, next_offset, ended, state = parts[offset]
        elif quiet["left"] > 0:
            quiet["left"] -= 1
            text, next_offset, ended, state = "", offset, False, "running"
        else:
            text, next_offset, ended, state = "done", end + 4, True, "succeeded"
        body = {
            "jobId": job_id,
            "stream": stream,
            "offset": offset,
            "nextOffset": next_offset,
            "text": text,
            "ended": ended,
            "source": "backend",
            "state": state,
        }
        route.fulfill(status=200, content_type="application/json", body=json.dumps(body))

    return answer, asked


def test_the_job_page_follows_stdout_by_offset_until_it_ended(
    page: Any, api: ApiClient, scene: list[str], shoot: Callable[[Any, str], Path]
) -> None:
    job = api.submit({"workload": "artifacts", "projectId": "demo", "inputs": [{"blob": scene[0]}]})
    answer, asked = scripted_log(job["id"])
    page.route("**/api/jobs/*/logs?*", answer)
    page.goto(f"#/job/{job['id']}")
    log = page.locator("#job-log")
    page.get_by_role("status").filter(has_text="The job succeeded; its stdout ends here.").wait_for(timeout=15000)
    assert log.inner_text() == f"line 1\nline 2\nAccountKey=[REDACTED]\n{MARKUP}\ndone"
    assert page.locator("#injected").count() == 0  # the log is text, never markup
    offsets = [offset for stream, offset in asked if stream == "stdout"]
    assert offsets[:2] == [0, 14]
    assert offsets[-1] == offsets[-2]
    assert len(offsets) == 5  # and none after the one that said it ended
    shoot(page, "job-output")
    page.get_by_label("stderr").check()
    page.get_by_role("status").filter(has_text="No stderr yet").wait_for()
    assert log.inner_text() == ""
    shoot(page, "job-output-empty")  # an empty log region passes the audit too
    page.unroute("**/api/jobs/*/logs?*")


def test_a_failed_jobs_stderr_from_the_api_after_its_end(
    page: Any, api: ApiClient, console_stack: LocalStack, shoot: Callable[[Any, str], Path]
) -> None:
    blobs = BlobServiceClient.from_connection_string(console_stack.azurite.connection_string)
    inputs = load_settings(console_stack.env).storage.inputs_container
    blobs.get_blob_client(inputs, "demo/not-a-raster.tif").upload_blob(b"not a raster", overwrite=True)
    job = api.submit({"workload": "imagery", "projectId": "demo", "inputs": [{"blob": "demo/not-a-raster.tif"}]})
    ended = wait_terminal(api, job["id"])
    assert ended["state"] == "failed", ended["history"][-2:]
    stderr = api.logs(job["id"], "stderr", 0)
    assert stderr["ended"]
    assert stderr["text"].rstrip().splitlines()[-1].startswith("error: ")
    page.goto(f"#/job/{job['id']}")
    page.get_by_label("stderr").check()
    page.get_by_role("status").filter(has_text="The job failed; its stderr ends here.").wait_for(timeout=15000)
    assert page.locator("#job-log").inner_text() == stderr["text"]
    shoot(page, "job-stderr")
