"""A monthly budget per project, that holds (issue 41; docs/adr/0042).

What a project has spent this month is what its ended jobs cost (the running totals,
:mod:`hastegeo.pipeline.totals`) and what its running jobs have cost so far (``committed``,
priced by the reconciler's pass from the runs their backends reported). Once that reaches the
project's budget, the submit step holds new jobs as ``queued`` with the reason (``project p1
has spent 412.50 of 400.00 USD this month``) or refuses them (they fail with it), as
``HASTE_BUDGET_ACTION`` says. So the overshoot is the rest of what the jobs running when it
was reached go on to cost, as a project's running jobs are bounded by its limits (ADR 0032).

A project's budget is ``HASTE_PROJECT_BUDGETS``'s, unless an admin set another at run time
(``PUT /api/projects/{id}/budget``, kept in ``costs/budgets.json`` and read at most once a
minute per process). The first write of a month's totals that reaches the warning level
(``HASTE_BUDGET_WARN_PERCENT``) or the budget marks it in that write, unsent, then sends
``com.haste.project.budget`` and marks it sent: a crash between the two leaves it unsent, and the
next write of the month (a job ending, the reconciler's pass) sends it. At least once, with one id.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from azure.core import MatchConditions
from azure.core.exceptions import ResourceExistsError, ResourceModifiedError, ResourceNotFoundError
from azure.storage.blob import ContainerClient, ContentSettings

from hastegeo.costs.attribution import to_cents
from hastegeo.costs.pricer import Pricer
from hastegeo.models.states import JobState
from hastegeo.pipeline.totals import PREFIX, CostTotals, Month, month_of
from hastegeo.settings.app import CostSettings
from hastegeo.store.jobs import JobStore
from hastegeo.utils.errors import ConflictError

OVERRIDES = f"{PREFIX}/budgets.json"
CACHE_S = 60.0
EVENT_TYPE = "com.haste.project.budget"
_JSON = ContentSettings(content_type="application/json")
# States in which a job's compute runs or ran and its cost is not in the totals yet: it is committed.
RUNNING = frozenset({JobState.SUBMITTING, JobState.RUNNING, JobState.CANCEL_REQUESTED, JobState.POSTPROCESSING})


def budget_event(
    project: str, month: str, level: int, budget: Decimal, spent: Decimal, currency: str
) -> dict[str, Any]:
    """The CloudEvent that a project's month reached ``level`` percent of its budget (docs/events.md)."""
    return {
        "specversion": "1.0",
        "id": f"budget.{project}.{month}.{level}",
        "source": f"/haste-compute/projects/{project}",
        "type": EVENT_TYPE,
        "subject": f"budget/{month}",
        "time": datetime.now(UTC).isoformat(),
        "datacontenttype": "application/json",
        "data": {
            "version": 1,
            "projectId": project,
            "month": month,
            "level": level,
            "budget": str(budget),
            "spent": str(spent),
            "currency": currency,
            "message": f"project {project} has spent {to_cents(spent)} of {to_cents(budget)} {currency} this month",
        },
    }


class Budgets:
    def __init__(
        self,
        container: ContainerClient,
        settings: CostSettings,
        *,
        clock: Callable[[], datetime],
        currency: Callable[[], str],
        send: Callable[[list[dict[str, Any]]], None] | None = None,
    ) -> None:
        self._blob = container.get_blob_client(OVERRIDES)
        self._settings = settings
        self._clock = clock
        self._currency = currency
        self._send = send
        self._lock = threading.Lock()
        self._cached: tuple[float, dict[str, str]] | None = None

    @property
    def active(self) -> bool:
        return self._settings.budget_action != "off"

    @property
    def refuses(self) -> bool:
        return self._settings.budget_action == "refuse"

    @property
    def levels(self) -> tuple[int, ...]:
        return (self._settings.budget_warn_percent, 100) if self.active else ()

    # -- what a project's budget is ----------------------------------------------------

    def budget(self, project: str) -> Decimal | None:
        """The project's monthly budget: an admin's, else the settings' (None: it has none, or budgets are off)."""
        if not self.active:
            return None
        overrides = self._overrides()
        value = overrides[project] if project in overrides else self._settings.project_budgets.get(project)
        return None if value in (None, "") else Decimal(value)

    def projects(self) -> set[str]:
        """The projects with a budget."""
        if not self.active:
            return set()
        named = {*self._settings.project_budgets, *self._overrides()}
        return {project for project in named if self.budget(project) is not None}

    def set(self, project: str, amount: Decimal | None) -> Decimal | None:
        """An admin's budget for ``project`` (None: back to the settings'); the budget in force after it.

        Raises:
            ConflictError: the overrides kept changing.
        """
        for _ in range(50):
            overrides, etag = self._read()
            if amount is None:
                overrides.pop(project, None)
            else:
                overrides[project] = str(amount)
            condition = (
                {"etag": etag, "match_condition": MatchConditions.IfNotModified}
                if etag
                else {"match_condition": MatchConditions.IfMissing}
            )
            try:
                body = json.dumps({"budgets": overrides}, sort_keys=True).encode()
                self._blob.upload_blob(body, overwrite=True, content_settings=_JSON, **condition)
            except (ResourceModifiedError, ResourceExistsError):
                continue
            with self._lock:
                self._cached = (time.monotonic(), overrides)
            return self.budget(project)
        raise ConflictError("The budgets changed too often to update; try again")

    # -- what the pipeline asks ----------------------------------------------------------

    def reason(self, project: str, totals: CostTotals) -> str | None:
        """Why ``project`` may start nothing more this month (None: it may, or it has no budget)."""
        budget = self.budget(project)
        if budget is None:
            return None
        month = totals.month(project, month_of(self._clock().date()))
        spent = month.spent()
        if spent < budget:
            return None
        currency = month.currency or self._currency()
        return f"project {project} has spent {to_cents(spent)} of {to_cents(budget)} {currency} this month"

    def crossed(self, project: str, month: str, level: int, written: Month) -> None:
        """Send the event that ``project``'s ``month`` reached ``level`` percent of its budget."""
        budget = self.budget(project)
        if self._send is None or budget is None:
            return
        currency = written.currency or self._currency()
        self._send([budget_event(project, month, level, budget, written.spent(), currency)])

    def commit(self, store: JobStore, totals: CostTotals, pricer: Pricer) -> None:
        """Record each budgeted project's running jobs' cost so far in its month (the reconciler's pass).

        Lists each budgeted project's jobs in :data:`RUNNING` states (the project's state index: one
        listing and one read per such job, ADR 0011), prices their runs so far, and writes the month
        when the sum changed.
        """
        now = self._clock()
        for project in sorted(self.projects()):
            committed, token = Decimal(0), None
            while True:
                page = store.list(project, states=RUNNING, page_size=200, continuation_token=token)
                for job in page.jobs:
                    if job.state in RUNNING and job.usage is not None:
                        amount = pricer.cost(job.usage.so_far(now)).amount
                        committed += amount or Decimal(0)  # unknown: not counted (the job says why when it ends)
                token = page.continuation_token
                if not token:
                    break
            totals.commit(project, month_of(now.date()), committed)

    # -- the overrides blob ----------------------------------------------------------------

    def _overrides(self) -> dict[str, str]:
        with self._lock:
            if self._cached is not None and time.monotonic() - self._cached[0] < CACHE_S:
                return self._cached[1]
        overrides, _ = self._read()
        with self._lock:
            self._cached = (time.monotonic(), overrides)
        return overrides

    def _read(self) -> tuple[dict[str, str], str | None]:
        try:
            download = self._blob.download_blob()
        except ResourceNotFoundError:
            return {}, None
        body = json.loads(download.readall())
        return {str(k): str(v) for k, v in body.get("budgets", {}).items()}, str(download.properties.etag)
