"""The chaos table: one row per scenario, printed at the end of the session.

A plugin of the root conftest (not of tests/chaos/conftest.py): under pytest-xdist the
controller, which prints the summary, collects no test and so never loads the chaos
folder's conftest. Each worker hands its rows over in ``workeroutput`` when it finishes;
the controller adds them to its own (empty) list and prints one table.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

WORKER_KEY = "chaos_outcomes"


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput: dict[str, Any] | None = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        from .conftest import RESULTS

        workeroutput[WORKER_KEY] = [dataclasses.asdict(result) for result in RESULTS]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """xdist's hook on the controller: a worker finished (or crashed: then it sent nothing)."""
    from .conftest import RESULTS, Outcome

    RESULTS.extend(Outcome(**row) for row in getattr(node, "workeroutput", {}).get(WORKER_KEY, []))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    from .conftest import RESULTS

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
