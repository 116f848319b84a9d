"""The development host's ``params``: built as the Functions host builds them for a Python function."""

from __future__ import annotations

import pytest

from hastegeo_dev.devhost.query import query_params


@pytest.mark.parametrize(
    ("query", "params"),
    [
        ("projectId=p1&pageSize=5", {"projectId": "p1", "pageSize": "5"}),
        ("state=running&state=queued", {"state": "running,queued"}),  # repeats join, in order
        ("projectId=a&projectId=b", {"projectId": "a,b"}),
        ("pageSize=&projectId=p1", {"projectId": "p1"}),  # an empty value is left out
        ("flag&projectId=p1", {"projectId": "p1"}),
        ("state=&state=running", {"state": ",running"}),  # not empty once joined
        ("pageSize=5&PAGESIZE=7&Other=x", {"pageSize": "5,7", "Other": "x"}),  # keys are case-insensitive
        ("q=a%2Cb+c&r=%26", {"q": "a,b c", "r": "&"}),  # decoded as ASP.NET decodes them
        ("", {}),
    ],
)
def test_params_as_the_functions_host_hands_them_over(query: str, params: dict[str, str]) -> None:
    assert query_params(query) == params
