"""The report's two forms: a table whose commands and URLs can be copied whole, and JSON for CI."""

from __future__ import annotations

import json

from hastegeo.doctor.render import as_json, as_table
from hastegeo.doctor.result import CheckResult, Status, exit_code

URL = "https://learn.microsoft.com/azure/batch/batch-quota-limit#increase-a-quota"
RESULTS = [
    CheckResult("batch", "pool quota", Status.PASS, "5 pool(s), quota 100"),
    CheckResult("batch", "dedicated cores", Status.FAIL, "16 needed, quota 0", f"request 16 cores ({URL}) now"),
    CheckResult("entra", "app registration", Status.UNKNOWN, "403", "sign in as its owner"),
    CheckResult("aml", "environment haste-runtime", Status.WARN, "not registered yet"),
]


def test_the_table_keeps_commands_and_urls_whole_and_counts_each_status() -> None:
    text = as_table(RESULTS, width=60)
    assert any(f"({URL})" in line for line in text.splitlines())
    assert "FAIL  batch" in text
    assert "??    entra" in text
    assert text.splitlines()[-1] == "1 pass, 1 warn, 1 fail, 1 unknown"


def test_json_says_whether_the_deployment_is_ok() -> None:
    report = json.loads(as_json(RESULTS))
    assert report["ok"] is False
    assert report["failing"] == 2
    assert report["checks"][1] == {
        "area": "batch",
        "name": "dedicated cores",
        "status": "fail",
        "found": "16 needed, quota 0",
        "fix": f"request 16 cores ({URL}) now",
        "deferred": False,
    }


def test_warnings_do_not_fail_the_exit_code() -> None:
    assert exit_code([RESULTS[0], RESULTS[3]]) == 0
    assert exit_code(RESULTS) == 1
