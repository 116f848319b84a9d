"""The id pattern is defined once (hastegeo.models.ids); every check and schema uses that definition."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from api.openapi import openapi_document
from hastegeo.auth import PROJECT_ID
from hastegeo.models.ids import ID_BODY, ID_PATTERN, is_id
from hastegeo.models.job import JobInput, JobRequest
from hastegeo.store.queues import JobMessage

ROOT = Path(__file__).resolve().parents[3]
HOME = "hastelib/src/hastegeo/models/ids.py"
# The shape of the pattern, whatever its bounds: a lowercase alphanumeric, then alphanumerics or dashes.
COPY = re.compile(r"\[a-z0-9\]\s*\[(?:a-z0-9-|-a-z0-9|a-z-0-9)\]")


def tracked_sources() -> list[str]:
    listed = subprocess.run(
        [
            "git",
            "ls-files",
            "--cached",
            "--others",
            "--exclude-standard",
            "--",
            "*.py",
            "*.bicep",
            "*.json",
            "*.yml",
            "*.yaml",
            "*.ts",
            "*.js",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [name for name in listed if not name.startswith(("tests/", "node_modules/")) and name != "package-lock.json"]


def test_the_id_pattern_is_written_once() -> None:
    files = tracked_sources()
    assert HOME in files
    assert len(files) > 100
    copies = [
        f"{name}:{number}"
        for name in files
        if name != HOME
        for number, line in enumerate((ROOT / name).read_text(encoding="utf-8").splitlines(), 1)
        if ID_BODY in line or COPY.search(line)
    ]
    assert copies == [], "use hastegeo.models.ids instead of a copy of the id pattern"


def test_the_scan_would_see_a_copy() -> None:
    assert COPY.search('_X = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")')
    assert COPY.search("pattern: '^[a-z0-9][-a-z0-9]{1,63}$'")
    assert not COPY.search('_LABEL_KEY = re.compile(r"[A-Za-z0-9_.\\-]{1,63}")')


@pytest.mark.parametrize("value", ["a", "0", "j1", "abc-def", "a" * 63, "0190abc1234def"])
def test_every_check_accepts_an_id(value: str) -> None:
    assert is_id(value)
    assert PROJECT_ID.fullmatch(value)
    assert JobMessage(job_id=value, kind="submit").job_id == value
    assert JobInput(job_id=value).job_id == value
    assert JobRequest.model_validate({"workload": "artifacts", "projectId": value}).project_id == value


@pytest.mark.parametrize("value", ["", "-a", "A1", "a_b", "a" * 64, "j1\n", "a.b", "a/b"])
def test_every_check_refuses_a_non_id(value: str) -> None:
    assert not is_id(value)
    assert not PROJECT_ID.fullmatch(value)
    with pytest.raises(ValueError, match=r"job_id|jobId"):
        JobMessage(job_id=value, kind="submit")
    with pytest.raises(ValueError, match=r"jobId|job_id"):
        JobInput(job_id=value)


def test_the_openapi_document_states_the_same_pattern() -> None:
    document = str(openapi_document())
    assert document.count(ID_PATTERN) >= 2  # the path parameter and the project filter
    assert f"^/api/jobs/{ID_BODY}$" in document
