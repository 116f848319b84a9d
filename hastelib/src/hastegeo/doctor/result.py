"""What one check found: a typed result with its status and, when it did not pass, the exact fix."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from typing import Any


class Status(enum.StrEnum):
    PASS = "pass"  # noqa: S105 (a status, not a password)
    WARN = "warn"  # works, but something an operator should know (not a failure)
    FAIL = "fail"
    UNKNOWN = "unknown"  # could not be checked (a 403, a missing setting): a failure for the exit code


# The areas a run covers, in report order (``--only`` picks among them).
AREAS = ("app", "roles", "batch", "aml", "entra", "easyauth", "telemetry")
FAILING = frozenset({Status.FAIL, Status.UNKNOWN})


@dataclass(frozen=True)
class CheckResult:
    """One line of the report.

    ``area`` groups checks (``--only`` selects areas); ``name`` says what was checked, ``found``
    what is there, and ``fix`` the exact step that makes it pass (empty when it passed).
    """

    area: str
    name: str
    status: Status
    found: str
    fix: str = ""
    # The fix is a step docs/deploy.md leaves to the operator after a deploy (a quota request):
    # reported like any failure, but ``--deferred-ok`` keeps it out of the exit code.
    deferred: bool = False

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["status"] = self.status.value
        return data


def passed(area: str, name: str, found: str) -> CheckResult:
    return CheckResult(area, name, Status.PASS, found)


def failed(area: str, name: str, found: str, fix: str) -> CheckResult:
    return CheckResult(area, name, Status.FAIL, found, fix)


def exit_code(results: Iterable[CheckResult], *, deferred_ok: bool = False) -> int:
    """0 when nothing failed or was left unchecked (a deferred failure too, with ``deferred_ok``), else 1."""
    return 1 if any(r.status in FAILING and not (deferred_ok and r.deferred) for r in results) else 0


def deferred(results: Iterable[CheckResult]) -> list[CheckResult]:
    """The same results, their failures marked as steps the operator takes after the deploy."""
    return [replace(r, deferred=True) if r.status in FAILING else r for r in results]
