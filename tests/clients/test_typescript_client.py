"""A TypeScript client from openapi-typescript + openapi-fetch drives the API: submit, get, list with paging, cancel.

``drive.ts`` is type-checked (strict) against the types generated from the served document,
then run with node against the development stack; this test checks what each step saw.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from hastegeo_dev.stack import LocalStack
from tests.clients.conftest import run_node

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
