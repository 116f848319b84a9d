"""``haste costs``: asks the project's costs for the range given and prints them, to the cent or as JSON."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from hastegeo.cli.main import main
from tests.support.stub_api import JsonHandler, serving

PATHS: list[str] = []
BODY = {
    "projectId": "p1",
    "from": "2026-11-01",
    "to": "2026-11-30",
    "currency": "USD",
    "total": "412.505",
    "jobs": 3,
    "unpriced": 1,
    "byBackend": {"azure_batch": "412.505"},
    "byWorkload": {"artifacts": "412.505"},
    "byGroup": {},
    "days": [{"day": "2026-11-02", "amount": "412.505", "jobs": 3, "unpriced": 1}],
}


class Handler(JsonHandler):
    def do_GET(self) -> None:
        PATHS.append(self.path)
        self.answer(BODY)


@pytest.fixture
def server() -> Iterator[str]:
    with serving(Handler) as url:
        yield url


def test_costs_prints_the_days_and_totals_to_the_cent(server: str, capsys: pytest.CaptureFixture[str]) -> None:
    PATHS.clear()
    argv = ["costs", "--url", server, "--project", "p1", "--from", "2026-11-01", "--to", "2026-11-30"]
    assert main([*argv, "--output", "table"]) == 0
    assert PATHS == ["/api/projects/p1/costs?from=2026-11-01&to=2026-11-30"]
    out = capsys.readouterr().out
    assert "project p1, 2026-11-01 to 2026-11-30: 412.51 USD" in out
    assert "3 job(s) ended, 1 with no known price (not in the sums)" in out
    assert "backend azure_batch: 412.51 USD" in out
    assert main([*argv, "--output", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["total"] == "412.505"  # exact in JSON
