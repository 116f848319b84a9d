"""Every route of the OpenAPI document, fuzzed: no 5xx, every 4xx is problem+json, nothing stored when rejected.

Every answer's status code must be one the document lists for that operation, with the headers
it lists (``Location`` on 202, ``Retry-After`` on 429/503), and its body must conform to the
response schema, which forbids fields it does not name (so no internal bookkeeping leaks).
A stateful run follows the document's links: submit, then read and cancel the job, cancel it
again, list and follow the continuation token.

The schema is the one the running host serves (``/api/openapi.json``); schemathesis generates
cases that fit it (positive) and cases that break it (negative), sends them to a development
host on Azurite, and checks each answer with its own checks plus ours.

Bounded for CI: ``FUZZ_EXAMPLES`` cases per operation and mode (default 40; the folder runs in
well under a minute on two cores). Run longer with, for example::

    FUZZ_EXAMPLES=500 .venv/bin/python -m pytest tests/fuzz -q

Generation is derandomized, so a failure in CI reproduces locally with the same ``FUZZ_EXAMPLES``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any

import jsonschema
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.stateful import initialize
from schemathesis import GenerationMode
from schemathesis.checks import CheckFunction, not_a_server_error
from schemathesis.generation.stateful.state_machine import StepInput, StepOutput
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from hastegeo.pipeline.accept import REENQUEUE_AFTER_S
from tests.fuzz.conftest import Storage

pytestmark = [pytest.mark.azurite, pytest.mark.slow]

FuzzCase = schemathesis.Case[Any]
FUZZ_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "40"))
OPERATIONS = (
    "submitJob",
    "listJobs",
    "getJob",
    "cancelJob",
    "retryJob",
    "getJobLogs",
    "listBackends",
    "getProjectCosts",
    "setProjectBudget",
    "health",
    "openapi",
    "consoleIndex",
    "consoleConfig",
    "consoleFile",
    "submitGroup",
    "getGroup",
    "cancelGroup",
    "retryGroup",
)
# Operations without parameters or a body have nothing to negate: positive only.
NO_INPUT = {"health", "openapi", "consoleIndex", "consoleConfig"}
FUZZ_RUNS = [
    pytest.param(operation_id, mode, id=f"{operation_id}-{mode}")
    for operation_id in OPERATIONS
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    if mode is GenerationMode.POSITIVE or operation_id not in NO_INPUT
]
CHECKS: list[CheckFunction] = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
# Not in CHECKS: positive_data_acceptance (a schema-valid submit can still fail a workload's own rule,
# e.g. imagery needs an input: a documented 400) and negative_data_rejection (requests without the
# function key / bearer token are let through locally: the platform checks those, not the app).
REQUEST_TIMEOUT_S = 15
FUZZ_SETTINGS = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)


@dataclass
class Submissions:
    """What POST /jobs answered: jobs it created, and idempotent replays that may have re-enqueued one;
    what POST /groups and a group's cancel answered: groups created (one make message each), and cancels
    accepted (at most a cancel and a make message each; none when the group was cancelling already)."""

    created: int = 0
    groups: int = 0
    group_cancels: int = 0
    replays: int = 0
    # A replay of a job still queued after REENQUEUE_AFTER_S sends its submit message again (by design).
    reenqueues_certain: int = 0
    reenqueues_possible: int = 0
    statuses: dict[int, int] = field(default_factory=dict)

    def record_group(self, label: str, response: schemathesis.Response) -> None:
        if response.status_code == 202:
            self.groups += label == "POST /groups"
            self.group_cancels += label == "POST /groups/{id}/cancel"

    def record(self, response: schemathesis.Response) -> None:
        self.statuses[response.status_code] = self.statuses.get(response.status_code, 0) + 1
        if response.status_code == 202:
            self.created += 1
        elif response.status_code == 200:
            self.replays += 1
            job = response.json()
            if job.get("state") == "queued":
                age = (_server_time(response) - datetime.fromisoformat(job["createdAt"])).total_seconds()
                self.reenqueues_certain += age > REENQUEUE_AFTER_S + 2
                self.reenqueues_possible += age > REENQUEUE_AFTER_S - 2


def header(response: schemathesis.Response, name: str) -> str:
    values = {key.lower(): value for key, value in response.headers.items()}.get(name.lower(), [])
    return values[0] if values else ""


def _server_time(response: schemathesis.Response) -> datetime:
    date = header(response, "Date")
    return parsedate_to_datetime(date) if date else datetime.now().astimezone()


def describe(case: FuzzCase, response: schemathesis.Response) -> str:
    answer = f"{response.status_code} {header(response, 'Content-Type')}: {response.text[:500]}"
    return f"{case.as_curl_command()}\n-> {answer}"


def check_shape(case: FuzzCase, response: schemathesis.Response) -> None:
    """Our contract on top of the document: problem+json 4xx whose status matches, JSON 2xx."""
    status = response.status_code
    assert status < 500, describe(case, response)
    content_type = header(response, "Content-Type").split(";")[0].strip()
    if 400 <= status < 500:
        assert content_type == "application/problem+json", describe(case, response)
        body = json.loads(response.content)
        assert isinstance(body, dict), describe(case, response)
        assert isinstance(body.get("title"), str), describe(case, response)
        assert body["title"], describe(case, response)
        assert body.get("status") == status, describe(case, response)
    elif 200 <= status < 300:
        assert content_type == "application/json", describe(case, response)
        json.loads(response.content)


CREATES_JOBS = ("POST /jobs", "POST /jobs/{id}/retry")  # the operations that store a new job
# The operations that store a group or send on groups-make (a retry only of a completed group: none here).
CHANGES_GROUPS = ("POST /groups", "POST /groups/{id}/cancel", "POST /groups/{id}/retry")


def run_case(
    case: FuzzCase, session: requests.Session, base_url: str, submissions: Submissions
) -> schemathesis.Response:
    response = case.call(base_url=base_url, session=session, timeout=REQUEST_TIMEOUT_S)
    if case.operation.label in CREATES_JOBS:
        submissions.record(response)
    if case.operation.label in CHANGES_GROUPS:
        submissions.record_group(case.operation.label, response)
    check_shape(case, response)
    case.validate_response(response, checks=CHECKS)
    return response


def assert_nothing_else_stored(storage: Storage, before: tuple[int, int, int, int], submissions: Submissions) -> None:
    stored = tuple(now - then for now, then in zip(storage.counts(), before, strict=True))
    assert stored[0] == submissions.created, (stored, submissions)
    low = submissions.created + submissions.reenqueues_certain
    high = submissions.created + submissions.reenqueues_possible
    assert low <= stored[1] <= high, (stored, submissions)
    assert stored[2] == submissions.groups, (stored, submissions)
    assert submissions.groups <= stored[3] <= submissions.groups + 2 * submissions.group_cancels, (stored, submissions)


def test_the_document_names_every_operation_fuzzed(schema: schemathesis.BaseSchema) -> None:
    # From the document itself: schemathesis's own listing leaves out the URL the schema was loaded from.
    found = {op["operationId"] for item in schema.raw_schema["paths"].values() for op in item.values()}
    assert found == set(OPERATIONS)


@pytest.mark.parametrize(("operation_id", "mode"), FUZZ_RUNS)
def test_fuzz(
    schema: schemathesis.BaseSchema,
    api_base_url: str,
    storage: Storage,
    operation_id: str,
    mode: GenerationMode,
) -> None:
    operation = schema.find_operation_by_id(operation_id)  # type: ignore[attr-defined]
    submissions = Submissions()
    before = storage.counts()
    with requests.Session() as session:

        @FUZZ_SETTINGS
        @given(case=operation.as_strategy(generation_mode=mode))
        def fuzz(case: FuzzCase) -> None:
            run_case(case, session, api_base_url, submissions)

        fuzz()
    assert_nothing_else_stored(storage, before, submissions)


VALID: dict[str, Any] = {"workload": "artifacts", "projectId": "fuzz", "inputs": [{"blob": "fuzz/a.txt"}]}


def test_a_valid_job_round_trip_conforms_and_stores_exactly_one_job(
    schema: schemathesis.BaseSchema, api_base_url: str, storage: Storage
) -> None:
    """The fuzz rarely lands on an existing job; walk one through submit, replay, list, read, cancel and retry."""
    ops = {op_id: schema.find_operation_by_id(op_id) for op_id in OPERATIONS}  # type: ignore[attr-defined]
    submissions = Submissions()
    before = storage.counts()
    with requests.Session() as session:
        headers = {"Idempotency-Key": "fuzz-round-trip"}
        first = run_case(ops["submitJob"].Case(body=VALID, headers=headers), session, api_base_url, submissions)
        replay = run_case(ops["submitJob"].Case(body=VALID, headers=headers), session, api_base_url, submissions)
        assert (first.status_code, replay.status_code) == (202, 200)
        job_id = first.json()["id"]
        assert replay.json()["id"] == job_id
        conflict = run_case(
            ops["submitJob"].Case(body={**VALID, "labels": {"a": "b"}}, headers=headers),
            session,
            api_base_url,
            submissions,
        )
        assert conflict.status_code == 409
        listed = run_case(ops["listJobs"].Case(query={"projectId": "fuzz"}), session, api_base_url, submissions)
        assert job_id in {job["id"] for job in listed.json()["items"]}
        read = run_case(
            ops["getJob"].Case(path_parameters={"id": job_id}, query={"readUrls": "true"}),
            session,
            api_base_url,
            submissions,
        )
        assert read.status_code == 200
        cancelled = run_case(ops["cancelJob"].Case(path_parameters={"id": job_id}), session, api_base_url, submissions)
        assert cancelled.status_code == 202
        assert cancelled.json()["state"] == "cancelled"  # it was queued: cancelled at once
        again = run_case(ops["cancelJob"].Case(path_parameters={"id": job_id}), session, api_base_url, submissions)
        assert again.status_code == 409  # it has ended: nothing left to cancel, as the document says
        retried = run_case(ops["retryJob"].Case(path_parameters={"id": job_id}), session, api_base_url, submissions)
        assert retried.status_code == 202
        assert retried.json()["retryOf"] == job_id
        full = run_case(
            ops["listJobs"].Case(query={"projectId": "fuzz", "include": "history"}), session, api_base_url, submissions
        )
        assert "history" in full.json()["items"][0]
    assert submissions.created == 2  # the job and its retry
    assert_nothing_else_stored(storage, before, submissions)


@pytest.mark.parametrize("project_id", ["", "Upper", "-lead", "a" * 64])
def test_list_jobs_accepts_every_project_id_its_document_allows(
    schema: schemathesis.BaseSchema, api_base_url: str, project_id: str
) -> None:
    operation = schema.find_operation_by_id("listJobs")  # type: ignore[attr-defined]
    (parameter,) = (p for p in operation.definition.raw["parameters"] if p["name"] == "projectId")
    documented = jsonschema.Draft202012Validator(parameter["schema"]).is_valid(project_id)
    with requests.Session() as session:
        response = run_case(operation.Case(query={"projectId": project_id}), session, api_base_url, Submissions())
    # Once the document carries the pattern, these values are documented as invalid and this passes.
    assert not documented or response.status_code == 200, (project_id, response.status_code, response.text)


WALK_JOB: dict[str, Any] = {**VALID, "projectId": "walk", "inputs": [{"blob": "walk/a.txt"}]}
PAGES_JOB: dict[str, Any] = {**VALID, "projectId": "pages", "inputs": [{"blob": "pages/a.txt"}]}


def test_listing_pages_follow_their_tokens_and_conform(
    schema: schemathesis.BaseSchema, api_base_url: str, storage: Storage
) -> None:
    """Three jobs, listed one per page: each page conforms and its token leads to the next, then to none."""
    ops = {op_id: schema.find_operation_by_id(op_id) for op_id in OPERATIONS}  # type: ignore[attr-defined]
    submissions = Submissions()
    before = storage.counts()
    with requests.Session() as session:
        created = [
            run_case(ops["submitJob"].Case(body=PAGES_JOB), session, api_base_url, submissions) for _ in range(3)
        ]
        seen: list[str] = []
        query: dict[str, str] = {"projectId": "pages", "pageSize": "1"}
        for _ in range(4):
            page = run_case(ops["listJobs"].Case(query=query), session, api_base_url, submissions).json()
            seen += [item["id"] for item in page["items"]]
            if page["continuationToken"] is None:
                break
            query["continuationToken"] = page["continuationToken"]
        assert sorted(seen) == sorted(response.json()["id"] for response in created)
        assert len(seen) == 3
        other = run_case(
            ops["listJobs"].Case(query={"projectId": "fuzz", "continuationToken": query["continuationToken"]}),
            session,
            api_base_url,
            submissions,
        )
        assert other.status_code == 400  # a token of another project's listing
    assert_nothing_else_stored(storage, before, submissions)


def test_stateful_workflows_follow_the_links_and_conform(
    schema: schemathesis.BaseSchema, api_base_url: str, storage: Storage
) -> None:
    """Random walks along the document's links (submit -> get/cancel -> cancel again; list -> next page).

    Random bodies rarely make a valid job, so each walk starts from one valid submission and one
    listing of a page of one (what the links then lead from); the rest is generated. Two jobs are
    there before the first walk: a page of one then always has a next page, so every walk can take
    the same links. Hypothesis replays a walk's choices and stops with ``FlakyStrategyDefinition``
    when a link it took before is missing (the first walks found an empty project).
    """
    submissions = Submissions()
    answered: dict[tuple[str, int], int] = {}
    before = storage.counts()
    workflow = schema.as_state_machine()
    submit, list_jobs = (schema.find_operation_by_id(op) for op in ("submitJob", "listJobs"))  # type: ignore[attr-defined]
    with requests.Session() as session:
        for _ in range(2):
            run_case(submit.Case(body=WALK_JOB), session, api_base_url, submissions)

        class Workflow(workflow):  # type: ignore[misc,valid-type]
            @initialize(target=workflow.bundles["POST /jobs -> 202"])
            def a_valid_submission(self) -> StepOutput:
                return self.seed(submit.Case(body=WALK_JOB))

            @initialize(target=workflow.bundles["GET /jobs -> 200"])
            def a_page_of_one(self) -> StepOutput:
                return self.seed(list_jobs.Case(query={"projectId": "walk", "pageSize": "1"}))

            def seed(self, case: FuzzCase) -> StepOutput:
                """A first step the walk continues from, recorded as schemathesis records its own root steps."""
                first = StepInput.initial(case)
                self.recorder.record_case(case=case)
                self.control.record_step(first, self.recorder)
                return self.step(first)

            def get_call_kwargs(self, case: FuzzCase) -> dict[str, Any]:
                return {"base_url": api_base_url, "session": session, "timeout": REQUEST_TIMEOUT_S}

            def after_call(self, response: schemathesis.Response, case: FuzzCase) -> None:
                key = (case.operation.label, response.status_code)
                answered[key] = answered.get(key, 0) + 1
                if case.operation.label in CREATES_JOBS:  # a link from a failed or cancelled job reaches retry
                    submissions.record(response)
                if case.operation.label in CHANGES_GROUPS:
                    submissions.record_group(case.operation.label, response)

            def validate_response(
                self,
                response: schemathesis.Response,
                case: FuzzCase,
                additional_checks: list[CheckFunction] | None = None,
                **kwargs: Any,
            ) -> None:
                check_shape(case, response)
                case.validate_response(response, checks=CHECKS)

        Workflow.run(settings=settings(FUZZ_SETTINGS, max_examples=max(5, FUZZ_EXAMPLES // 2), stateful_step_count=6))
    # Only a link from a real job reaches these: a made-up id answers 404.
    assert ("GET /jobs/{id}", 200) in answered, answered
    assert answered[("GET /jobs", 200)] > max(5, FUZZ_EXAMPLES // 2), answered  # next pages were followed
    assert ("POST /jobs/{id}/cancel", 202) in answered, answered
    assert ("POST /jobs/{id}/cancel", 409) in answered, answered
    assert_nothing_else_stored(storage, before, submissions)


GROUP: dict[str, Any] = {
    "workload": "artifacts",
    "projectId": "fuzz",
    "inputs": [{"blob": "fuzz/a.txt"}],
    "items": [{"labels": {"tile": "0"}}, {"labels": {"tile": "1"}}],
}


def test_a_valid_group_round_trip_conforms_and_stores_exactly_one_group(
    schema: schemathesis.BaseSchema, api_base_url: str, storage: Storage
) -> None:
    """Submit, replay, conflict, read, list its items, cancel twice, retry too early, and a bad item: each answer
    conforms, and storage holds exactly one group, its make message and the cancel's two (the host makes nothing)."""
    ops = {op_id: schema.find_operation_by_id(op_id) for op_id in OPERATIONS}  # type: ignore[attr-defined]
    submissions = Submissions()
    before = storage.counts()
    with requests.Session() as session:

        def call(op_id: str, **parts: Any) -> schemathesis.Response:
            return run_case(ops[op_id].Case(**parts), session, api_base_url, submissions)

        headers = {"Idempotency-Key": "fuzz-group-round-trip"}
        first = call("submitGroup", body=GROUP, headers=headers)
        replay = call("submitGroup", body=GROUP, headers=headers)
        assert (first.status_code, replay.status_code) == (202, 200)
        group_id = first.json()["id"]
        assert replay.json()["id"] == group_id
        assert call("submitGroup", body={**GROUP, "labels": {"a": "b"}}, headers=headers).status_code == 409
        bad = call("submitGroup", body={**GROUP, "items": [{}, {"parameters": {"compressLevel": 42}}]})
        assert bad.status_code == 400
        assert bad.json()["errors"][0]["field"] == "items[1].parameters.compressLevel"
        read = call("getGroup", path_parameters={"id": group_id})
        assert (read.status_code, read.json()["counts"]["notMade"]) == (200, 2)
        listed = call("listJobs", query={"groupId": group_id})
        assert (listed.status_code, listed.json()["items"]) == (200, [])  # not made: this host makes nothing
        assert call("retryGroup", path_parameters={"id": group_id}).status_code == 409  # not completed
        cancelled = call("cancelGroup", path_parameters={"id": group_id})
        assert (cancelled.status_code, cancelled.json()["state"]) == (202, "cancelling")
        assert call("cancelGroup", path_parameters={"id": group_id}).status_code == 202  # a repeat changes nothing
        assert call("getGroup", path_parameters={"id": "gnosuchgroup0000"}).status_code == 404
    assert (submissions.groups, submissions.group_cancels) == (1, 2)
    assert_nothing_else_stored(storage, before, submissions)
    assert storage.counts()[3] - before[3] == 3  # make, then the cancel's cancel and make; the repeat sent none
