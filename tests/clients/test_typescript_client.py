"""A TypeScript client from openapi-typescript + openapi-fetch drives the API: submit, get, list with paging, cancel.

``drive.ts`` is type-checked (strict) against the types generated from the served document,
then run with node against the development stack; this test checks what each step saw.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from hastegeo_dev.stack import LocalStack
from tests.clients.conftest import GroupSteps, run_node

pytestmark = [pytest.mark.azurite, pytest.mark.slow]
JOBS = 5
PAGE = 2


def test_the_generated_typescript_client_submits_reads_pages_and_cancels(
    client_stack: LocalStack, typescript_driver: Path
) -> None:
    project = f"ts-{uuid.uuid4().hex[:8]}"
    seen = run_node(typescript_driver, f"{client_stack.base_url}/api", project, str(JOBS), str(PAGE))
    ids = seen["submitted"]
    assert len(set(ids)) == JOBS
    assert seen["replay"] == {"status": 200, "id": ids[-1]}
    assert seen["got"] == {"id": ids[0], "state": "queued", "history": ["queued"], "labels": {"n": "0"}}
    assert seen["missing"] == {"status": 404, "problem": 404}
    assert seen["listed"] == list(reversed(ids))
    assert seen["lastEvents"] == ["queued"] * JOBS
    assert seen["pages"] == -(-JOBS // PAGE)
    assert seen["cancelled"] == {"status": 202, "state": "cancelled"}
    assert seen["again"] == {"status": 409, "problem": 409}
    assert seen["retried"] == {
        "status": 202,
        "retryOf": ids[1],
        "replay": [200, True],
        "linked": True,
        "notEnded": [409, 409],
    }
    assert seen["onlyCancelled"] == [ids[1]]
    assert seen["logs"] == {"ended": [200, "", 0, True], "waiting": [False, "queued"]}
    assert "local" in seen["backends"]
    assert seen["health"] == 200


def test_the_generated_typescript_client_submits_and_follows_a_group(
    client_stack: LocalStack, typescript_driver: Path, group_steps: GroupSteps
) -> None:
    driver, base, items = typescript_driver.with_name("drive_groups.js"), f"{client_stack.base_url}/api", 4
    project = f"tsg-{uuid.uuid4().hex[:8]}"
    submitted = run_node(driver, base, "submit", project, "", str(items))
    group_id = submitted["submitted"]["id"]
    assert submitted["submitted"] == {
        "status": 202,
        "id": group_id,
        "state": "open",
        "itemCount": items,
        "location": f"/api/groups/{group_id}",
    }
    assert submitted["replay"] == {"status": 200, "same": True}
    assert submitted["bad"] == {"status": 400, "fields": ["items"]}

    group_steps.deliver(group_id)  # the groups-make queue's step: the items become jobs
    followed = run_node(driver, base, "follow", project, group_id)
    assert followed["got"]["made"] == items
    assert followed["got"]["counts"]["queued"] == items
    assert followed["items"] == [[n, str(n)] for n in range(items)]  # item order, across pages of 3
    assert followed["cancelled"] == {"status": 202, "state": "cancelling"}

    group_steps.cancelled(group_id)
    retried = run_node(driver, base, "retry", project, group_id)
    assert retried["ended"]["state"] == "completed"
    assert retried["ended"]["counts"]["cancelled"] == items
    assert retried["ended"]["failures"] == items
    assert retried["retried"] == {"status": 202, "retried": items, "state": "open"}
    assert retried["again"] == {"status": 409, "problem": 409}
    assert retried["missing"] == {"status": 404, "problem": 404}
