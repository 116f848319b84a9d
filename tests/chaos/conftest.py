"""The chaos suite: faults on loopback, bounded in count and time; prints a table at the end.

``make chaos`` runs it with more jobs (``CHAOS_JOBS``, 100); ``make test`` runs the small version, six
jobs a scenario: more jobs than slots, so jobs queue behind one another, and every crash point a
scenario names is still hit (each scenario asserts that its crash points fired). A scenario that needs
more keeps a floor of its own (two hosts splitting a burst: 20).
The table is printed by tests/chaos/table.py (a plugin of the root conftest, so that it also
prints when pytest-xdist runs the scenarios in workers).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

CHAOS_JOBS = int(os.environ.get("CHAOS_JOBS", "6"))


@dataclass
class Outcome:
    scenario: str
    jobs: int = 0
    terminal: int = 0
    succeeded: int = 0
    duplicates: int = 0
    lost_events: int = 0
    leaks: int = 0
    notes: list[str] = field(default_factory=list)
    # Ground truth (tests/chaos/ground_truth.py): violations per column, None where not checked.
    truth: dict[str, int | None] = field(default_factory=dict)


RESULTS: list[Outcome] = []


@pytest.fixture
def outcome(request: pytest.FixtureRequest) -> Iterator[Outcome]:
    result = Outcome(scenario=request.node.name.removeprefix("test_"))
    yield result
    RESULTS.append(result)
