"""Query parameters every route reads the same way: whole numbers, and the options of a job listing.

A project's listing and a group's (``GET /api/jobs?groupId=…``) take the same ``pageSize``,
``state`` and ``include``, checked here once: a bad value is a 400 naming it in both, never a
value one of them ignores without a word or a number too long for Python to read (a 500).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from api.access import Denied
from api.problems import problem
from hastegeo.models.states import JobState

MAX_PAGE = 200
INCLUDES = frozenset({"history"})
STATES = tuple(state.value for state in JobState)


def whole_number(value: str, maximum: int) -> int | None:
    """``value`` as an integer from 0 to ``maximum``, or None.

    ASCII digits only: ``int`` would also take ``+5``, `` 5``, ``1_0`` and other scripts' digits, none of
    which the document's integer allows, and raises on more than 4,300 digits; leading zeros are fine.
    """
    if not (value.isascii() and value.isdigit() and len(value.lstrip("0")) <= len(str(maximum))):
        return None
    number = int(value)
    return number if number <= maximum else None


@dataclass(frozen=True)
class ListOptions:
    """What a listing was asked for: the states to keep (None: all), the page size, and the history or not."""

    states: frozenset[JobState] | None
    page_size: int
    history: bool


def list_options(params: Mapping[str, str]) -> ListOptions:
    """The listing options of a query.

    Raises:
        Denied: 400 naming ``pageSize``, ``state`` or ``include`` when one is not what the document allows.
    """
    states: frozenset[JobState] | None = None
    if params.get("state"):
        names = params["state"].split(",")
        unknown = [name for name in names if name not in STATES]
        if unknown:
            shown = ", ".join(repr(name[:40]) for name in unknown[:5])
            message = f"not a state: {shown}; choose from {', '.join(STATES)}"
            raise Denied(problem(400, "Unknown state", errors=[("state", message)]))
        states = frozenset(JobState(name) for name in names)
    page_size = whole_number(params.get("pageSize", "50"), MAX_PAGE)
    if not page_size:
        raise Denied(problem(400, "Invalid pageSize", errors=[("pageSize", f"an integer from 1 to {MAX_PAGE}")]))
    include = frozenset(filter(None, params.get("include", "").split(",")))
    if not include <= INCLUDES:
        raise Denied(
            problem(400, "Unknown include", errors=[("include", f"choose from {', '.join(sorted(INCLUDES))}")])
        )
    return ListOptions(states, page_size, "history" in include)
