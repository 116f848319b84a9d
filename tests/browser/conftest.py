"""The web console in a real browser: Debian's chromium driven by Playwright, against the development stack.

One stack (Azurite + the development host in its own process + the local backend)
and one browser serve this folder's tests (package scope: Playwright's synchronous API
keeps an event loop running in the main thread, which must be gone before other tests
call ``asyncio.run``); each test opens its own page. Pages'
screenshots go to ``.haste/screenshots/`` (printed at the end of the session).
Chromium must be at /usr/bin/chromium (``make browser`` installs it): Playwright's
own browser download cannot work on these machines, so a missing browser fails
the tests with that instruction rather than skipping them.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from hastegeo.cli.client import ApiClient
from hastegeo.cli.sample_data import upload_sample_scene
from hastegeo.models.history import StatusEvent
from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo_dev.checkout import repo_root
from hastegeo_dev.stack import LocalStack

CHROMIUM = Path("/usr/bin/chromium")
# axe-core from npm (package.json), run in the page: a serious or critical violation fails the test.
AXE = repo_root() / "node_modules" / "axe-core" / "axe.min.js"
BLOCKING = ("serious", "critical")
SCREENSHOTS = repo_root() / ".haste" / "screenshots"
SCENE = 256  # pixels a side: every workload of the chain finishes in seconds
TERMINAL = {"succeeded", "failed", "cancelled"}

pytestmark = [pytest.mark.azurite, pytest.mark.slow]


CONSOLE_PROFILES = json.dumps(
    {
        "cpu-small": {"maxRunS": 600, "workloads": ["artifacts", "imagery"], "description": "small areas"},
        "long": {"maxRunS": 7200, "workloads": ["training"]},
    }
)


@pytest.fixture(scope="package")
def console_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    workdir = tmp_path_factory.mktemp("console-stack")
    settings = {"HASTE_POLL_INITIAL_S": "0.5", "HASTE_POLL_MAX_S": "1", "HASTE_LOCAL_SLOTS": "2"}
    settings["HASTE_LOCAL_PRICE_PER_SLOT_HOUR"] = "36"  # local jobs cost something: the costs page has bars
    settings["HASTE_LOCAL_PROFILES"] = CONSOLE_PROFILES  # the submit form offers them (test_console_profiles)
    with LocalStack(workdir, settings=settings) as stack:
        yield stack


@pytest.fixture(scope="package")
def scene(console_stack: LocalStack, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The demo's synthetic scene in the inputs container (project ``demo``): rasters, labels, buildings."""
    return upload_sample_scene(
        console_stack.azurite.connection_string, tmp_path_factory.mktemp("scene"), "demo/scene", size=SCENE
    )


@pytest.fixture(scope="package")
def api(console_stack: LocalStack) -> ApiClient:
    return ApiClient(console_stack.base_url)


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: run `make browser` (as root) or `sudo apt-get install -y chromium`")
    from playwright.sync_api import sync_playwright

    if SCREENSHOTS.exists():
        shutil.rmtree(SCREENSHOTS)
    SCREENSHOTS.mkdir(parents=True)
    with sync_playwright() as playwright:
        # --no-sandbox: CI runs as root, where chromium's sandbox refuses to start.
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield launched
        launched.close()
    print(f"\nconsole screenshots in {SCREENSHOTS}")


@pytest.fixture
def page(browser: Any, console_stack: LocalStack) -> Iterator[Any]:
    """A fresh page on the console; fails the test on any script error or CSP violation it logs.

    Answers the API gives on purpose (a 400 for a bad field) are logged by chromium as
    "Failed to load resource"; those are the tests' to check, so only they are let through.
    """
    context = browser.new_context(viewport={"width": 1200, "height": 900}, base_url=console_stack.console_url)
    opened = context.new_page()
    problems: list[str] = []
    opened.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    opened.on(
        "console",
        lambda message: (
            problems.append(f"console {message.type}: {message.text}")
            if message.type == "error" and not message.text.startswith("Failed to load resource")
            else None
        ),
    )
    yield opened
    context.close()
    assert not problems, problems


def accessibility_violations(page: Any) -> list[str]:
    """axe-core's serious and critical violations on the page as it is now, one readable line each.

    axe is evaluated through the browser's debugging protocol, not as a script tag, so the
    console's CSP (no inline script) stays as strict as it is for users.
    """
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(AXE.read_text() + "\n;true")
    # The audit must leave the page as it found it: the focus goes back where it was.
    violations = page.evaluate(
        """async (blocking) => {
            const focused = document.activeElement;
            const found = await axe.run(document, {resultTypes: ["violations"]});
            if (focused && document.activeElement !== focused) focused.focus();
            return found.violations
            .filter(v => blocking.includes(v.impact))
            .map(v => `${v.impact} ${v.id}: ${v.help} at ${v.nodes.slice(0, 3).map(n => n.target.join(" ")).join(", ")}`
                + ` (${v.nodes[0] ? v.nodes[0].failureSummary.replace(/\\s+/g, " ") : ""})`);
        }""",
        list(BLOCKING),
    )
    return list(violations)


@pytest.fixture
def shoot() -> Callable[[Any, str], Path]:
    """Check a page state with axe-core (failing on a serious or critical violation), then save a full-page
    screenshot of it under .haste/screenshots/ and return its path. Every state a test shows goes through here."""

    def take(page: Any, name: str) -> Path:
        if not AXE.exists():
            pytest.fail(f"{AXE} is missing: run `make install` (axe-core is pinned in package.json)")
        violations = accessibility_violations(page)
        path = SCREENSHOTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        assert violations == [], f"{name}: {violations}"
        return path

    return take


def finished_job(
    job_id: str,
    project: str,
    created: datetime,
    reason: str | None,
    labels: dict[str, str] | None = None,
    workload: str = "imagery",
) -> Job:
    """A job that ended (failed with ``reason``, else succeeded), to write straight into the store: no compute."""
    state = JobState.FAILED if reason else JobState.SUCCEEDED
    return Job(
        id=job_id,
        project_id=project,
        workload=workload,
        state=state,
        requested_backend="local",
        backend="local",
        labels=labels or {},
        reason=reason,
        created_at=created,
        updated_at=created,
        finished_at=created,
        deadline_at=created + timedelta(hours=1),
        history=[
            StatusEvent(at=created, state=JobState.QUEUED, message="accepted", source="api"),
            StatusEvent(at=created, state=state, message=reason or "done", source="postprocess"),
        ],
    )


def wait_terminal(api: ApiClient, job_id: str, timeout: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        job = api.get(job_id)
        if job["state"] in TERMINAL:
            return job
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job_id} still {job['state']} after {timeout}s: {job['history'][-3:]}")
        time.sleep(0.3)
