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
     ({"monthlyBudget": True}, "monthlyBudget"), ({"monthlyBudget": "NaN"}, "monthlyBudget"), ([], ""),
     ({"monthlyBudget": "1", "budget": "1"}, "budget"), ({}, "monthlyBudget"),
     # A number is not the document's string (it was read, and kept as a float wrote it)
     ({"monthlyBudget": 12}, "monthlyBudget"), ({"monthlyBudget": 9.5}, "monthlyBudget"),
     # What Decimal reads but the document's pattern does not: it was stored as sent ("1E+3", "-0")
     *(({"monthlyBudget": text}, "monthlyBudget") for text in ("1e3", "1E+2", "-0", " 5", "5 ", "5_000", "\u0665",
                                                              "+5", "5.", ".5", "0x10", "1" * 13)),
     ({"monthlyBudget": -0.0}, "monthlyBudget"), ({"monthlyBudget": 1e20}, "monthlyBudget")],
)  # fmt: skip
def test_a_bad_budget_is_a_400_naming_the_field(api_settings: Callable[..., None], body: object, field: str) -> None:
    api_settings(HASTE_BUDGET_ACTION="refuse")
    status, answer = put_budget("p1", body)
    assert status == 400, answer
    assert [error["field"] for error in answer["errors"]] == [field]
    budgets = get_runtime().api.deps.budgets
    assert budgets is not None
    assert budgets.budget("p1") is None  # nothing stored


@pytest.mark.parametrize(
    ("sent", "kept"), [("0", "0"), ("400.5", "400.5"), ("007.25", "7.25"), ("12", "12"), ("9.50", "9.50")]
)
def test_a_budget_is_kept_in_the_form_every_money_field_has(
    api_settings: Callable[..., None], sent: object, kept: str
) -> None:
    api_settings(HASTE_BUDGET_ACTION="refuse")
    status, answer = put_budget("p1", {"monthlyBudget": sent})
    assert status == 200, answer
    assert answer["monthlyBudget"] == kept


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
    assert totals.month("pw", "2026-11").warned == set()  # marked only: the fold's write decides (ADR 0051)
    totals.fold()
    month = totals.month("pw", "2026-11")
    assert (month.warned, month.unsent, sent) == ({80}, {80}, [])  # reached, marked, not sent
    down[0] = False
    totals.add(ended("w1", "0.90", day=3, project="pw"))  # a redelivery: its fold writes nothing,
    totals.fold()  # yet sends what is owed
    assert sent == [("pw", "2026-11", 80)]
    totals.add(ended("w2", "0.20", day=4, project="pw"))
    totals.fold()
    assert sent == [("pw", "2026-11", 80), ("pw", "2026-11", 100)]
    month = totals.month("pw", "2026-11")
    assert (month.warned, month.unsent) == ({80, 100}, set())
    totals.add(ended("w3", "0.50", day=5, project="pw"))
    totals.fold()
    assert len(sent) == 2  # each level once, when nothing fails


@pytest.mark.usefixtures("api")
def test_a_marked_job_is_read_at_once_and_folded_once_by_the_pass_which_retires_it() -> None:
    """ADR 0051: the end leaves a marker; readers count it; the fold adds it to the document, once, and
    deletes the marker and the entries it stands in for."""
    api = get_runtime().api
    totals = api.journal.totals
    assert totals is not None
    jobs = api.blobs.get_container_client(api.settings.storage.jobs_container)
    job = ended("m1", "0.40", day=3, project="pm")
    grouped = ended("m2", None, day=3, project="pm").model_copy(update={"group_id": "g1"})
    retire = ["active/pm/8203374088842-m1"]
    for name in retire:
        jobs.upload_blob(name, b"", overwrite=True)
    assert totals.add(job, retire=retire)
    assert totals.add(grouped)
    assert totals.add(grouped)  # redelivered: the same marker
    pending = [b.name for b in jobs.list_blobs(name_starts_with="costs-pending/pm/")]
    assert pending == ["costs-pending/pm/2026-11/m1", "costs-pending/pm/2026-11/m2"]

    read = totals.month("pm", "2026-11")  # before the fold: the document has nothing, the reader both
    assert (read.total(), sorted(read.counted), read.days["2026-11-03"].unpriced) == (Decimal("0.40"), ["m1", "m2"], 1)
    assert read.days["2026-11-03"].unpriced_by["group"] == {"g1": 1}
    assert totals.month("pm", "2026-11", pending=False).counted == set()

    assert totals.fold() == 2
    stored = totals.month("pm", "2026-11", pending=False)
    assert (stored.total(), sorted(stored.counted)) == (Decimal("0.40"), ["m1", "m2"])
    assert list(jobs.list_blobs(name_starts_with="costs-pending/pm/")) == []
    assert [name for name in retire if jobs.get_blob_client(name).exists()] == []  # retired with the fold

    # A marker written again after the fold (the sweep's repair after a lost answer) counts nothing twice.
    assert totals.add(job)
    assert totals.month("pm", "2026-11").total() == Decimal("0.40")
    assert totals.fold() == 1
    assert totals.month("pm", "2026-11", pending=False).total() == Decimal("0.40")
    assert list(jobs.list_blobs(name_starts_with="costs-pending/pm/")) == []
