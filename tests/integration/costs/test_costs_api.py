"""``GET /api/projects/{id}/costs`` from the running totals: sums, breakdowns, counted once, access, bad input."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from hastegeo.auth import PRINCIPAL_HEADER, Principal, Role, encode_principal
from hastegeo.costs.attribution import Cost
from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.runtime import get_runtime
from tests.integration.test_api import CALLER, call

pytestmark = pytest.mark.azurite


def costs(project: str, **params: str) -> tuple[int, Any]:
    url = f"http://localhost/api/projects/{project}/costs"
    status, body, _ = call("project_costs", "GET", url, route_params={"id": project}, params=params)
    return status, body


@pytest.fixture
def api(api_settings: Callable[..., None]) -> None:
    api_settings()


def ended(job_id: str, amount: str | None, *, day: int, backend: str = "local", project: str = "p1") -> Job:
    at = datetime(2026, 11, day, 12, tzinfo=UTC)
    cost = Cost(amount=None if amount is None else Decimal(amount), currency="USD", attributed=False)
    if amount is None:
        cost = Cost(amount=None, currency=None, reason="no price for Standard_X in westeurope", attributed=False)
    return Job(
        id=job_id,
        project_id=project,
        workload="artifacts",
        state=JobState.SUCCEEDED,
        requested_backend=backend,
        backend=backend,
        created_at=at,
        updated_at=at,
        finished_at=at,
        deadline_at=at,
        cost=cost,
    )


@pytest.mark.usefixtures("api")
def test_the_totals_sum_each_job_once_by_day_and_backend() -> None:
    totals = get_runtime().api.journal.totals
    assert totals is not None
    jobs = [
        ended("a1", "0.10", day=1),
        ended("a2", "0.25", day=1, backend="azure_batch"),
        ended("a3", "1.05", day=2, backend="azure_batch"),
        ended("a4", None, day=2),
        ended("b1", "9.99", day=2, project="p2"),
    ]
    for job in jobs + jobs[:3]:  # redelivered: the second add changes nothing
        totals.add(job)
    status, body = costs("p1", **{"from": "2026-11-01", "to": "2026-11-30"})
    assert status == 200, body
    assert (body["total"], body["jobs"], body["unpriced"], body["currency"]) == ("1.40", 4, 1, "USD")
    assert body["byBackend"] == {"azure_batch": "1.30", "local": "0.10"}
    assert [(d["day"], d["amount"], d["jobs"]) for d in body["days"]] == [
        ("2026-11-01", "0.35", 2),
        ("2026-11-02", "1.05", 2),
    ]
    status, body = costs("p1", **{"from": "2026-11-02", "to": "2026-11-02"})
    assert (status, body["total"]) == (200, "1.05")


@pytest.mark.usefixtures("api")
@pytest.mark.parametrize(
    ("query", "field"),
    [("from=2026-13-01", "from"), ("to=yesterday", "to"), ("from=2026-11-02&to=2026-11-01", "from"),
     ("from=2024-01-01&to=2026-01-01", "to")],
)  # fmt: skip
def test_a_bad_range_is_a_400_naming_the_field(query: str, field: str) -> None:
    status, body = costs("p1", **dict(pair.split("=") for pair in query.split("&")))
    assert status == 400, body
    assert [error["field"] for error in body["errors"]] == [field]


@pytest.mark.usefixtures("api")
def test_another_projects_costs_are_forbidden() -> None:
    status, _ = costs("p2")
    assert status == 403


ADMIN = encode_principal(Principal("root@example.com", "oid-root", frozenset({Role.ADMIN}), frozenset()))


def put_budget(project: str, body: object, principal: str = ADMIN) -> tuple[int, Any]:
    url = f"http://localhost/api/projects/{project}/budget"
    headers = {PRINCIPAL_HEADER: principal}
    status, answer, _ = call("set_project_budget", "PUT", url, body, route_params={"id": project}, headers=headers)
    return status, answer


def test_an_admin_changes_a_budget_at_run_time(api_settings: Callable[..., None]) -> None:
    api_settings(HASTE_BUDGET_ACTION="hold", HASTE_PROJECT_BUDGETS="p1=400")
    budgets = get_runtime().api.deps.budgets
    assert budgets is not None
    assert budgets.budget("p1") == Decimal(400)
    assert put_budget("p1", {"monthlyBudget": "412.50"}) == (
        200,
        {"projectId": "p1", "monthlyBudget": "412.50", "action": "hold"},
    )
    assert budgets.budget("p1") == Decimal("412.50")
    status, body = costs("p1")
    assert status == 200
    assert body["budget"]["monthly"] == "412.50"
    assert body["budget"]["reason"] is None
    assert put_budget("p1", {"monthlyBudget": None})[1]["monthlyBudget"] == "400"  # the settings' again
    status, _ = put_budget("p1", {"monthlyBudget": "5"}, principal=CALLER)  # a submitter may not
    assert status == 403


@pytest.mark.parametrize(
    ("body", "field"),
    [({"monthlyBudget": "-1"}, "monthlyBudget"), ({"monthlyBudget": "1.005"}, "monthlyBudget"),
     ({"monthlyBudget": True}, "monthlyBudget"), ({"budget": "1"}, ""), ({"monthlyBudget": "NaN"}, "monthlyBudget")],
)  # fmt: skip
def test_a_bad_budget_is_a_400_naming_the_field(api_settings: Callable[..., None], body: object, field: str) -> None:
    api_settings(HASTE_BUDGET_ACTION="refuse")
    status, answer = put_budget("p1", body)
    assert status == 400, answer
    assert [error["field"] for error in answer["errors"]] == [field]


def test_budgets_that_are_off_cannot_be_set(api_settings: Callable[..., None]) -> None:
    api_settings()
    assert put_budget("p1", {"monthlyBudget": "10"})[0] == 409


@pytest.mark.usefixtures("api")
def test_a_budget_warning_a_crash_kept_from_its_queue_is_sent_by_the_next_write_of_the_month() -> None:
    from hastegeo.pipeline.totals import CostTotals, Month

    runtime = get_runtime()
    jobs = runtime.blobs.get_container_client(runtime.settings.storage.jobs_container)
    sent: list[tuple[str, str, int]] = []
    down = [True]

    def crossed(project: str, month: str, level: int, written: Month) -> None:
        if down[0]:
            raise ConnectionError("the events queue is down")  # as a crash right after the write would leave it
        sent.append((project, month, level))

    totals = CostTotals(jobs, budget_of=lambda project: Decimal("1.00"), levels=(80, 100), crossed=crossed)
    totals.add(ended("w1", "0.90", day=3, project="pw"))
    month = totals.month("pw", "2026-11")
    assert (month.warned, month.unsent, sent) == ({80}, {80}, [])  # reached, marked, not sent
    down[0] = False
    totals.add(ended("w1", "0.90", day=3, project="pw"))  # a redelivery writes nothing, yet sends what is owed
    assert sent == [("pw", "2026-11", 80)]
    totals.add(ended("w2", "0.20", day=4, project="pw"))
    assert sent == [("pw", "2026-11", 80), ("pw", "2026-11", 100)]
    month = totals.month("pw", "2026-11")
    assert (month.warned, month.unsent) == ({80, 100}, set())
    totals.add(ended("w3", "0.50", day=5, project="pw"))
    assert len(sent) == 2  # each level once, when nothing fails
