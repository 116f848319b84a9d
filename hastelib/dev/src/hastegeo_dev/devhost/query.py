"""A request's query string as the Functions host hands it to a Python function (``HttpRequest.params``).

The host reads the query with ASP.NET Core, whose keys are case-insensitive and whose repeated
values join with commas (``state=running&state=queued`` reaches the function as
``"running,queued"``), and it leaves out a parameter whose value is empty (the Python worker
does not ask for the host's nullable dictionaries). The development host builds ``params`` the
same way, so a handler sees here what it will see deployed.
"""

from __future__ import annotations

from urllib.parse import parse_qsl


def query_params(query: str) -> dict[str, str]:
    """``params`` for the raw query string ``query`` (pure): repeats joined, empty values left out.

    A key keeps the spelling it had first; later spellings of it in other cases add to it.
    """
    values: dict[str, list[str]] = {}
    spelling: dict[str, str] = {}
    for key, value in parse_qsl(query, keep_blank_values=True):
        values.setdefault(spelling.setdefault(key.lower(), key), []).append(value)
    joined = {key: ",".join(found) for key, found in values.items()}
    return {key: value for key, value in joined.items() if value}
