"""Compute profiles in the console and the CLI (ADR 0043): the submit form offers the profiles the chosen
workload and backend allow, the job runs under the one chosen, and ``haste submit --profile`` does the same."""

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


def offered(page: Any) -> list[str]:
    return page.get_by_label("Compute profile").locator("option").evaluate_all("nodes => nodes.map(n => n.value)")


def test_the_form_offers_the_profiles_of_the_workload_and_runs_the_job_under_the_chosen_one(
    page: Any, api: ApiClient, scene: list[str], shoot: Callable[[Any, str], Path]
) -> None:
    page.goto("#/submit?workload=artifacts")
    profile = page.get_by_label("Compute profile")
    profile.wait_for()
    assert offered(page) == ["", "cpu-small"]
    page.get_by_label("Workload").select_option("training")
    assert offered(page) == ["", "long"]
    page.get_by_label("Backend").select_option("local")
    assert offered(page) == ["", "long"]
    page.get_by_label("Workload").select_option("embedding")
    assert offered(page) == [""]  # no profile but the default for it
    page.get_by_label("Workload").select_option("artifacts")
    profile.select_option("cpu-small")
    assert "cpu-small (dedicated, at most 600 s)" in profile.locator("option:checked").text_content()
    page.get_by_label("Project").fill("demo")
    page.get_by_label("Input blobs").fill(scene[0])
    shoot(page, "submit-profile")
    page.get_by_role("button", name="Submit job").click()
    page.wait_for_url("**#/job/*")
    job_id = page.url.rsplit("/", 1)[1]
    job = wait_terminal(api, job_id)
    assert (job["profile"], job["state"]) == ("cpu-small", "succeeded")
    page.locator("dt").filter(has_text="profile").wait_for()
    assert page.locator("dt:text-is('profile') + dd").text_content() == "cpu-small"


def test_haste_submit_with_a_profile_and_backends_listing_them(
    console_stack: LocalStack, api: ApiClient, scene: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["--url", console_stack.base_url]
    submit = ["submit", "--workload", "artifacts", "--project", "demo", "--input", f"blob:{scene[0]}"]
    assert main([*base, "-o", "table", *submit, "--profile", "cpu-small"]) == 0
    job_id = capsys.readouterr().out.strip()
    assert api.get(job_id)["profile"] == "cpu-small"
    assert main([*base, "-o", "table", *submit, "--profile", "long"]) != 0
    said = capsys.readouterr()
    assert "profile" in said.err
    assert "allowed: default, cpu-small" in said.err
    assert main([*base, "-o", "table", "backends"]) == 0
    assert (
        "  profile cpu-small (dedicated, at most 10min) on a local process: artifacts, imagery"
        in capsys.readouterr().out
    )
    assert wait_terminal(api, job_id)["state"] == "succeeded"
