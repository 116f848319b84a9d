"""GET /api/jobs on Azurite: tokens are signed positions, every bad one is a 400 at once, items are summaries."""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hastegeo.auth import PRINCIPAL_HEADER, Principal, Role, encode_principal
from hastegeo.models.history import make_event
from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.runtime import get_runtime
from hastegeo.settings.load import load_settings
from hastegeo.store.cursor import TOKEN_MAX_CHARS
from hastegeo.store.jobs import JobStore
from hastegeo_dev.devhost.azurite import Azurite
from tests.integration.test_api import call
from tests.integration.test_store import new_job
from tests.support.runtime import development_runtime

pytestmark = pytest.mark.azurite

ADMIN = {PRINCIPAL_HEADER: encode_principal(Principal("ops@example.com", "oid-ops", frozenset({Role.ADMIN})))}
START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def seed(store: JobStore) -> dict[str, list[Job]]:
    """Seven jobs in p1 (two created in the same millisecond, two cancelled) and three in p2, stored directly."""
    stored: dict[str, list[Job]] = {"p1": [], "p2": []}
    for project, minutes in (("p1", [0, 1, 2, 2, 3, 4, 5]), ("p2", [0, 1, 2])):
        for index, minute in enumerate(minutes):
            job = new_job(project=project, created=START + timedelta(minutes=minute))
            if project == "p1" and index in (1, 4):
                job = job.model_copy(update={"state": JobState.CANCELLED})
            assert store.create(job)
            stored[project].append(job)
    return stored


@pytest.fixture(scope="module")
def seeded(azurite: Azurite, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], dict[str, list[Job]]]:
    """The seed, stored once for the tests that only read it: the containers' settings, and the jobs."""
    token = uuid.uuid4().hex[:10]
    names = {f"HASTE_{kind}_CONTAINER": f"{kind.lower()}-{token}" for kind in ("JOBS", "INPUTS", "OUTPUTS")}
    env = {"AzureWebJobsStorage": azurite.connection_string, "HASTE_LOCAL_ROOT": str(tmp_path_factory.mktemp("l"))}
    runtime = development_runtime(load_settings({**env, **names}))
    try:
        return names, seed(runtime.store)
    finally:
        for adapter in runtime.registry.built().values():
            adapter.close()


@pytest.fixture
def jobs(
    api_settings: Callable[..., None], seeded: tuple[dict[str, str], dict[str, list[Job]]]
) -> dict[str, list[Job]]:
    """The module's seed, for a test that changes no job (the API reads the seed's containers)."""
    names, stored = seeded
    api_settings(**names)
    return stored


@pytest.fixture
def own_jobs(api_settings: Callable[..., None]) -> dict[str, list[Job]]:
    """The seed in containers of the test's own, for a test that adds or changes jobs."""
    api_settings()
    return seed(get_runtime().store)


def listing(**params: str) -> tuple[int, Any]:
    status, body, response = call("list_jobs", "GET", "/api/jobs", params=params, headers=ADMIN)
    if status >= 400:
        assert response.mimetype == "application/problem+json"
    return status, body


def follow(page_size: int, **params: str) -> tuple[list[str], list[str]]:
    """Every id a paging client sees (following tokens to the end), and the tokens it was given."""
    ids: list[str] = []
    tokens: list[str] = []
    query = {"pageSize": str(page_size), **params}
    for _ in range(50):  # a listing that never ends fails here instead of looping
        status, page = listing(**query)
        assert status == 200, page
        ids += [item["id"] for item in page["items"]]
        if page["continuationToken"] is None:
            return ids, tokens
        tokens.append(page["continuationToken"])
        query["continuationToken"] = page["continuationToken"]
    raise AssertionError("the listing did not end")


def newest_first(jobs: list[Job]) -> list[str]:
    return [job.id for job in sorted(jobs, key=lambda job: (-int(job.created_at.timestamp() * 1000), job.id))]


@pytest.mark.parametrize("page_size", [1, 2, 3, 7, 50])
def test_following_tokens_yields_every_job_once_newest_first(jobs: dict[str, list[Job]], page_size: int) -> None:
    ids, tokens = follow(page_size, projectId="p1")
    assert ids == newest_first(jobs["p1"])
    assert len(tokens) == -(-7 // page_size) - 1  # no token after the last page, not even an empty page's
    for token in tokens:
        assert len(token) <= TOKEN_MAX_CHARS
        body = token.split(".")[0]
        decoded = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode()
        settings = get_runtime().settings.storage
        assert not [part for part in ("index/", settings.jobs_container, "p1") if part in decoded]


def test_a_state_filter_pages_through_only_matching_jobs(jobs: dict[str, list[Job]]) -> None:
    cancelled = [job for job in jobs["p1"] if job.state is JobState.CANCELLED]
    assert follow(1, projectId="p1", state="cancelled")[0] == newest_first(cancelled)
    queued = [job for job in jobs["p1"] if job.state is JobState.QUEUED]
    assert follow(2, projectId="p1", state="queued,succeeded")[0] == newest_first(queued)


def test_a_token_keeps_its_place_when_newer_jobs_arrive(own_jobs: dict[str, list[Job]]) -> None:
    status, first = listing(projectId="p1", pageSize="3")
    assert status == 200
    newer = new_job(created=START + timedelta(hours=1))
    assert get_runtime().store.create(newer)
    rest, _ = follow(3, projectId="p1", continuationToken=first["continuationToken"])
    assert [item["id"] for item in first["items"]] + rest == newest_first(own_jobs["p1"])
    assert follow(50, projectId="p1")[0][0] == newer.id


def _token(**params: str) -> str:
    status, page = listing(pageSize="1", **params)
    assert status == 200, page
    assert page["continuationToken"], page
    return str(page["continuationToken"])


def _forged(token: str) -> str:
    """The same token with its position moved to another job (the signature left as it was)."""
    body, _, signature = token.partition(".")
    version, created_ms, _ = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    moved = json.dumps([version, created_ms - 60_000, "job-elsewhere"], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(moved).rstrip(b"=").decode() + "." + signature


BAD_TOKENS: dict[str, Callable[[], str]] = {
    "bytes": lambda: "\x00\x01",
    "20000 characters": lambda: "A" * 20_000,
    "just over the bound": lambda: "A" * (TOKEN_MAX_CHARS + 1),
    "not base64": lambda: "%%%garbage",
    "valid base64 of junk": lambda: base64.urlsafe_b64encode(b"\x00junk" * 6).decode().rstrip("=") + "." + "A" * 22,
    "another project's": lambda: _token(projectId="p2"),
    "another state filter's": lambda: _token(projectId="p1", state="queued"),
    "forged to point elsewhere": lambda: _forged(_token(projectId="p1")),
    "an old storage marker": lambda: "index/p1/8235999999999-job-0001",
}


@pytest.mark.parametrize("kind", list(BAD_TOKENS))
def test_every_bad_token_is_a_400_naming_it_at_once(jobs: dict[str, list[Job]], kind: str) -> None:
    token = BAD_TOKENS[kind]()
    started = time.monotonic()
    status, problem = listing(projectId="p1", continuationToken=token)
    assert time.monotonic() - started < 1.0
    assert status == 400, (kind, problem)
    assert problem["title"] == "Invalid continuationToken"
    assert [error["field"] for error in problem["errors"]] == ["continuationToken"]
    assert token[:50] not in json.dumps(problem)  # the answer does not echo the token back


def test_items_are_summaries_unless_the_history_is_asked_for(own_jobs: dict[str, list[Job]]) -> None:
    store = get_runtime().store
    job = own_jobs["p1"][-1]
    store.update(job.id, lambda j: j.model_copy(update={"history": [*j.history, make_event(START, j.state, "x", "t")]}))
    full = store.get(job.id).api_view()
    status, page = listing(projectId="p1", pageSize="1")
    assert status == 200
    (item,) = page["items"]
    assert not {"history", "historyFolded"} & set(item)
    assert item["lastEvent"] == full["history"][-1]
    assert {k: v for k, v in item.items() if k != "lastEvent"} == {
        k: v for k, v in full.items() if k not in ("history", "historyFolded")
    }
    status, page = listing(projectId="p1", pageSize="1", include="history")
    assert (status, page["items"]) == (200, [full])
    status, problem = listing(projectId="p1", include="everything")
    assert (status, [e["field"] for e in problem["errors"]]) == (400, ["include"])
