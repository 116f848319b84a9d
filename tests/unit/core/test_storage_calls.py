"""The bench's names for storage requests (what ``make bench`` prints per job)."""

from __future__ import annotations

import pytest

from tests.bench.storage_calls import operation

BLOB = "http://127.0.0.1:10000/devstoreaccount1"


@pytest.mark.parametrize(
    ("method", "url", "name"),
    [
        ("PUT", f"{BLOB}/haste-jobs/jobs/a.json", "PUT blob"),
        ("GET", f"{BLOB}/haste-jobs?restype=container&comp=list&prefix=active%2F", "GET container list"),
        ("PUT", f"{BLOB}/haste-jobs?restype=container", "PUT container"),
        ("HEAD", f"{BLOB}/haste-jobs/keys/state-index-v1", "HEAD blob"),
        ("PUT", f"{BLOB}/haste-jobs/jobs/a.json?comp=metadata", "PUT blob metadata"),
        ("POST", f"{BLOB}/jobs-poll/messages?visibilitytimeout=5", "POST queue message"),
        ("DELETE", f"{BLOB}/jobs-poll/messages/123?popreceipt=x", "DELETE queue message"),
    ],
)
def test_each_request_is_named_by_method_and_what_it_acts_on(method: str, url: str, name: str) -> None:
    assert operation(method, url) == name
