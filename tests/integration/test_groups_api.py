"""The group routes called as the Functions host calls them, with a real runtime on Azurite (ADR 0040)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from hastegeo.auth import Principal, Role, encode_principal
from hastegeo.runtime import get_runtime
from hastegeo.store.queues import GroupMessage

from .test_api import call

pytestmark = pytest.mark.azurite
OTHER = encode_principal(Principal("bo@example.com", "oid-bo", frozenset({Role.SUBMITTER}), frozenset({"p2"})))
BODY = {"workload": "artifacts", "projectId": "p1", "inputs": [{"blob": "p1/a.txt"}], "items": [{}, {}, {}]}


@pytest.fixture
def api(api_settings: Callable[..., None]) -> None:
    api_settings()


def stored_groups() -> list[str]:
    container = get_runtime().blobs.get_container_client(get_runtime().settings.storage.jobs_container)
    return [blob.name for blob in container.list_blobs(name_starts_with="groups")]


@pytest.mark.usefixtures("api")
def test_a_group_is_accepted_read_listed_and_hidden_from_other_projects() -> None:
    status, group, response = call("submit_group", "POST", "/api/groups", BODY, headers={"Idempotency-Key": "tiles-1"})
    assert status == 202
    assert response.headers["Location"] == f"/api/groups/{group['id']}"
    assert group["counts"]["notMade"] == 3
    again, same, _ = call("submit_group", "POST", "/api/groups", BODY, headers={"Idempotency-Key": "tiles-1"})
    assert again == 200
    assert same["id"] == group["id"]
    get_runtime().api.groups.handle(GroupMessage(group_id=group["id"]))
    status, read, _ = call("get_group", "GET", f"/api/groups/{group['id']}", route_params={"id": group["id"]})
    assert status == 200
    assert read["counts"]["queued"] == 3
    status, page, _ = call("list_jobs", "GET", "/api/jobs", params={"groupId": group["id"], "pageSize": "2"})
    assert status == 200
    assert [job["groupIndex"] for job in page["items"]] == [0, 1]
    assert page["continuationToken"] == "2"
    hidden = call(
        "get_group",
        "GET",
        f"/api/groups/{group['id']}",
        route_params={"id": group["id"]},
        headers={"X-MS-CLIENT-PRINCIPAL": OTHER},
    )
    missing = call("get_group", "GET", "/api/groups/gmissing", route_params={"id": "gmissing"})
    assert hidden[0] == missing[0] == 404
    assert hidden[1]["title"] == missing[1]["title"] == "Group not found"
    status, cancelled, _ = call(
        "cancel_group", "POST", f"/api/groups/{group['id']}/cancel", route_params={"id": group["id"]}
    )
    assert status == 202
    assert cancelled["state"] == "cancelling"


@pytest.mark.usefixtures("api")
def test_a_bad_group_gets_a_400_naming_the_item_field_and_stores_nothing() -> None:
    status, problem, _ = call("submit_group", "POST", "/api/groups", {**BODY, "items": [{}, {}, {"colour": 1}]})
    assert status == 400
    assert [e["field"] for e in problem["errors"]] == ["items[2].colour"]
    body = {**BODY, "items": [{}, {"parameters": {"compressLevel": "very"}}]}
    status, problem, _ = call("submit_group", "POST", "/api/groups", body)
    assert status == 400
    assert [e["field"] for e in problem["errors"]] == ["items[1].parameters.compressLevel"]
    status, problem, _ = call("submit_group", "POST", "/api/groups", {**BODY, "items": []})
    assert status == 400
    assert problem["errors"][0]["field"] == "items"
    assert stored_groups() == []


@pytest.mark.usefixtures("api")
def test_a_group_costs_the_sum_of_its_ended_items_and_says_when_it_is_not_whole() -> None:
    from datetime import UTC, datetime
    from decimal import Decimal

    from hastegeo.costs.attribution import Cost
    from hastegeo.models.states import JobState

    status, group, _ = call("submit_group", "POST", "/api/groups", BODY)
    assert status == 202
    runtime = get_runtime()
    runtime.api.groups.handle(GroupMessage(group_id=group["id"]))
    totals = runtime.api.journal.totals
    assert totals is not None
    read = lambda: call("get_group", "GET", f"/api/groups/{group['id']}", route_params={"id": group["id"]})[1]  # noqa: E731
    assert read()["cost"] == {
        "amount": None,
        "currency": None,
        "endedItems": 0,
        "unpricedItems": 0,
        "final": False,
    }
    now = datetime.now(UTC)
    amounts = {0: "0.40", 1: "1.15", 2: None}
    for index, amount in amounts.items():
        job = runtime.api.deps.store.get(f"{group['id']}-{index}")
        cost = (
            Cost(amount=Decimal(amount), currency="USD", attributed=False)
            if amount
            else Cost(amount=None, currency=None, reason="no price for Standard_X in westeurope", attributed=False)
        )
        ended = job.model_copy(update={"state": JobState.SUCCEEDED, "finished_at": now, "cost": cost})
        totals.add(ended)
        totals.add(ended)  # redelivered: counted once
    other = job.model_copy(update={"id": "x1", "group_id": "gother", "state": JobState.SUCCEEDED, "finished_at": now})
    totals.add(other.model_copy(update={"cost": Cost(amount=Decimal("9"), currency="USD", attributed=False)}))
    cost = read()["cost"]
    assert (cost["amount"], cost["currency"], cost["unpricedItems"], cost["final"]) == ("1.55", "USD", 1, False)


@pytest.mark.usefixtures("api")
def test_a_job_and_a_group_list_the_jobs_that_wait_for_them() -> None:
    job = {"workload": "artifacts", "projectId": "p1", "inputs": [{"blob": "p1/a.txt"}]}
    _, upstream, _ = call("submit_job", "POST", "/api/jobs", job)
    _, group, _ = call("submit_group", "POST", "/api/groups", BODY)
    _, first, _ = call("submit_job", "POST", "/api/jobs", {**job, "after": [upstream["id"]]})
    _, second, _ = call("submit_job", "POST", "/api/jobs", {**job, "after": [upstream["id"], group["id"]]})
    assert second["waitingFor"] == [upstream["id"], group["id"]]

    def read(route: str, name: str) -> dict[str, object]:
        status, body, _ = call(f"get_{route}", "GET", f"/api/{route}s/{name}", route_params={"id": name})
        assert status == 200
        return body

    waited = read("job", upstream["id"])
    assert (sorted(waited["dependents"]), waited["dependentsMore"]) == (sorted([first["id"], second["id"]]), False)
    assert (read("group", group["id"])["dependents"], read("group", group["id"])["dependentsMore"]) == (
        [second["id"]],
        False,
    )
    alone = read("job", second["id"])
    assert (alone["dependents"], alone["after"]) == ([], [upstream["id"], group["id"]])
    groups = get_runtime().api.deps.groups
    assert groups is not None
    shown, more = groups.first_dependents(upstream["id"], 1)
    assert (len(shown), more) == (1, True)  # one listing call: the rest is only said to exist
