"""The chaos suite: faults on loopback, bounded in count and time; prints a table at the end.

``make chaos`` runs it with more jobs (``CHAOS_JOBS``); ``make test`` runs the small version.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

CHAOS_JOBS = int(os.environ.get("CHAOS_JOBS", "12"))


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


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not RESULTS:
        return
    from .ground_truth import COLUMNS

    write = terminalreporter.write_line
    write("")
    write(
        f"{'scenario':<56}{'jobs':>6}{'terminal':>10}{'succeeded':>11}{'duplicates':>12}{'lost events':>13}{'leaks':>7}"
        + "".join(f"{name:>11}" for name in COLUMNS)
    )
    for r in RESULTS:
        write(
            f"{r.scenario[:55]:<56}{r.jobs:>6}{r.terminal:>10}{r.succeeded:>11}"
            f"{r.duplicates:>12}{r.lost_events:>13}{r.leaks:>7}"
            + "".join(f"{_cell(r.truth.get(name)):>11}" for name in COLUMNS)
        )


def _cell(violations: int | None) -> str:
    """A ground-truth column: ok, the number of violations, or - where the scenario has no such part."""
    return "-" if violations is None else "ok" if violations == 0 else f"{violations} bad"
