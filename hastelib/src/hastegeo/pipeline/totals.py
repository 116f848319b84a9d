"""Running totals of what a project's jobs cost: one document per project and month, kept as jobs end.

``costs/<project>/<yyyy-mm>.json`` in the jobs container holds, per day (the UTC day the job ended),
the amount and the number of jobs, by backend, by workload and by group, with the jobs whose cost was
not known counted apart (never as 0), and the ids of the jobs it counts. The journal adds a job once it
has ended (:class:`hastegeo.pipeline.journal.JobJournal`, step 1b) with an ETag-checked write; a job
already named is not added again, so a redelivered message, a retried step or the reconciler's repair
count it once. Reading a range costs one read per month in it, whatever the number of jobs
(docs/adr/0042).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import Any

from azure.core import MatchConditions
from azure.core.exceptions import AzureError, ResourceExistsError, ResourceModifiedError, ResourceNotFoundError
from azure.storage.blob import ContainerClient, ContentSettings

from hastegeo.models.job import Job
from hastegeo.utils.errors import ConflictError

log = logging.getLogger(__name__)

PREFIX = "costs"
MAX_ATTEMPTS = 50
_JSON = ContentSettings(content_type="application/json")
# The breakdowns a day keeps, and what of a job each is by.
BREAKDOWNS: dict[str, Callable[[Job], str | None]] = {
    "backend": lambda job: job.backend,
    "workload": lambda job: job.workload,
    # Job groups (issue 41 "per group"): the group a job belongs to, when the job model has one.
    "group": lambda job: getattr(job, "group_id", None),
}


@dataclass
class Day:
    amount: Decimal = Decimal(0)
    jobs: int = 0
    unpriced: int = 0  # jobs counted whose cost was not known (not in ``amount``)
    by: dict[str, dict[str, Decimal]] = field(default_factory=lambda: {name: {} for name in BREAKDOWNS})
    # The unpriced jobs by the same breakdowns: a group's amount is whole only when none of its items is here.
    unpriced_by: dict[str, dict[str, int]] = field(default_factory=lambda: {name: {} for name in BREAKDOWNS})

    def add(self, job: Job, amount: Decimal | None) -> None:
        self.jobs += 1
        if amount is None:
            self.unpriced += 1
        else:
            self.amount += amount
        for name, key_of in BREAKDOWNS.items():
            key = key_of(job)
            if not key:
                continue
            if amount is None:
                self.unpriced_by[name][key] = self.unpriced_by[name].get(key, 0) + 1
            else:
                self.by[name][key] = self.by[name].get(key, Decimal(0)) + amount

    def merge(self, other: Day) -> None:
        self.amount += other.amount
        self.jobs += other.jobs
        self.unpriced += other.unpriced
        for name, values in other.by.items():
            mine = self.by.setdefault(name, {})
            for key, value in values.items():
                mine[key] = mine.get(key, Decimal(0)) + value
        for name, counts in other.unpriced_by.items():
            known = self.unpriced_by.setdefault(name, {})
            for key, count in counts.items():
                known[key] = known.get(key, 0) + count

    def view(self) -> dict[str, Any]:
        return {
            "amount": str(self.amount),
            "jobs": self.jobs,
            "unpriced": self.unpriced,
            **{f"by{name.title()}": {k: str(v) for k, v in sorted(values.items())} for name, values in self.by.items()},
            **{f"unpricedBy{name.title()}": dict(sorted(counts.items())) for name, counts in self.unpriced_by.items()},
        }

    @classmethod
    def load(cls, body: dict[str, Any]) -> Day:
        return cls(
            amount=Decimal(body.get("amount", "0")),
            jobs=int(body.get("jobs", 0)),
            unpriced=int(body.get("unpriced", 0)),
            by={name: {k: Decimal(v) for k, v in body.get(f"by{name.title()}", {}).items()} for name in BREAKDOWNS},
            unpriced_by={
                name: {k: int(v) for k, v in body.get(f"unpricedBy{name.title()}", {}).items()} for name in BREAKDOWNS
            },
        )


@dataclass
class Month:
    currency: str | None = None
    days: dict[str, Day] = field(default_factory=dict)
    counted: set[str] = field(default_factory=set)
    # The running jobs' expected cost so far, as the reconciler's last pass priced them (hastegeo.pipeline.budget).
    committed: Decimal = Decimal(0)
    warned: set[int] = field(default_factory=set)  # budget levels (percent) reached this month
    unsent: set[int] = field(default_factory=set)  # of those, the levels whose event is not known to be sent

    def spent(self) -> Decimal:
        """What the month's ended jobs cost, and its running jobs so far: what a budget is held to."""
        return self.total() + self.committed

    def crossing(self, budget: Decimal | None, levels: tuple[int, ...]) -> list[int]:
        """The ``levels`` (percent of ``budget``) reached and not yet warned of: marked warned, to be sent."""
        if budget is None:
            return []
        spent = self.spent()
        new = [level for level in levels if level not in self.warned and spent * 100 >= budget * level]
        self.warned.update(new)
        self.unsent.update(new)
        return new

    def add(self, job: Job) -> bool:
        """Count ``job`` (ended, with its cost) once; False when it was counted already."""
        if job.id in self.counted or job.finished_at is None:
            return False
        self.counted.add(job.id)
        cost = job.cost
        amount = None if cost is None else cost.amount
        if amount is not None and cost is not None:
            if self.currency is None:
                self.currency = cost.currency
            elif cost.currency != self.currency:
                amount = None  # another currency: counted apart, never summed with these
        self.days.setdefault(job.finished_at.date().isoformat(), Day()).add(job, amount)
        return True

    def total(self) -> Decimal:
        return sum((day.amount for day in self.days.values()), Decimal(0))

    def dump(self) -> bytes:
        body = {
            "currency": self.currency,
            "days": {day: value.view() for day, value in sorted(self.days.items())},
            "counted": sorted(self.counted),
            "committed": str(self.committed),
            "warned": sorted(self.warned),
            "unsent": sorted(self.unsent),
        }
        return json.dumps(body, separators=(",", ":")).encode()

    @classmethod
    def load(cls, data: bytes) -> Month:
        body = json.loads(data)
        return cls(
            currency=body.get("currency"),
            days={day: Day.load(value) for day, value in body.get("days", {}).items()},
            counted=set(body.get("counted", [])),
            committed=Decimal(body.get("committed", "0")),
            warned={int(level) for level in body.get("warned", [])},
            unsent={int(level) for level in body.get("unsent", [])},
        )


def month_of(day: date) -> str:
    return f"{day.year:04d}-{day.month:02d}"


def months_between(start: date, end: date) -> list[str]:
    """``yyyy-mm`` of every month from ``start``'s to ``end``'s (inclusive)."""
    months, year, month = [], start.year, start.month
    while (year, month) <= (end.year, end.month):
        months.append(f"{year:04d}-{month:02d}")
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return months


@dataclass(frozen=True)
class GroupCost:
    """A group's items' cost so far: ``amount`` of the priced ones, and how many ended with no known price."""

    currency: str | None
    amount: Decimal
    unpriced: int

    def view(self, *, ended: int, complete: bool) -> dict[str, Any]:
        """The group's ``cost`` member: the amount is whole (``final``) once every item ended and all were priced."""
        return {
            "amount": str(self.amount) if self.currency or self.amount else None,
            "currency": self.currency,
            "endedItems": ended,
            "unpricedItems": self.unpriced,
            "final": complete and self.unpriced == 0,
        }


# A budget level a month's spending reached: (project, month, level in percent, the month as written).
Crossed = Callable[[str, str, int, Month], None]
# A project's monthly budget (None: none), and the levels (percent) its warnings are sent at.
BudgetOf = Callable[[str], Decimal | None]


class CostTotals:
    def __init__(
        self,
        container: ContainerClient,
        max_attempts: int = MAX_ATTEMPTS,
        *,
        budget_of: BudgetOf | None = None,
        levels: tuple[int, ...] = (),
        crossed: Crossed | None = None,
    ) -> None:
        """``budget_of``, ``levels`` and ``crossed``: a write that takes a project's month to a level of its
        budget marks it warned in that write, then tells ``crossed`` (once per level and month)."""
        self._container = container
        self._max_attempts = max_attempts
        self._budget_of = budget_of
        self._levels = levels
        self._crossed = crossed

    def add(self, job: Job) -> bool:
        """Add an ended job to its project's month (once); True when this call added it.

        Raises:
            ConflictError: the month's document kept changing (the caller's step or the sweep tries again).
            AzureError: storage failed.
        """
        if job.finished_at is None or not job.state.terminal:
            return False
        return self.change(job.project_id, month_of(job.finished_at.date()), lambda month: month.add(job))

    def commit(self, project: str, month: str, committed: Decimal) -> bool:
        """Record the project's running jobs' expected cost so far (the reconciler's pass); True when it changed."""

        def change(current: Month) -> bool:
            if current.committed == committed:
                return False
            current.committed = committed
            return True

        return self.change(project, month, change)

    def change(self, project: str, name: str, change: Callable[[Month], bool]) -> bool:
        """Apply ``change`` (False: nothing to write) to the project's month by ETag; True when it wrote."""
        blob = self._blob(project, name)
        budget = self._budget_of(project) if self._budget_of is not None and self._levels else None
        for _ in range(self._max_attempts):
            month, etag = self._read(blob)
            if not change(month):
                self._tell(project, name, month)  # a warning an earlier writer could not send
                return False
            month.crossing(budget, self._levels)
            condition = (
                {"etag": etag, "match_condition": MatchConditions.IfNotModified}
                if etag
                else {"match_condition": MatchConditions.IfMissing}
            )
            try:
                blob.upload_blob(month.dump(), overwrite=True, content_settings=_JSON, **condition)
            except (ResourceModifiedError, ResourceExistsError):
                continue
            self._tell(project, name, month)
            return True
        raise ConflictError(f"The cost totals of project {project} changed too often to update; try again")

    def _tell(self, project: str, name: str, month: Month) -> None:
        """Send the warnings ``month`` marks unsent, then mark them sent: an outbox, like the jobs' events.

        A crash between the write that reached a level and the send leaves it marked unsent, and the
        next write or read-for-write of the month (a job ending, the reconciler's pass) sends it: at
        least once, with the same event id, so a consumer drops a repeat (docs/events.md).
        """
        if not month.unsent or self._crossed is None:
            return
        sent = set()
        for level in sorted(month.unsent):
            try:
                self._crossed(project, name, level, month)
            except Exception:  # the queue or the topic: the next write of the month tries again
                log.warning("project %s: the %d%% budget warning of %s could not be sent yet", project, level, name)
                break
            sent.add(level)
        if not sent:
            return

        def mark(current: Month) -> bool:
            if not current.unsent & sent:
                return False
            current.unsent -= sent
            return True

        try:
            self.change(project, name, mark)
        except (ConflictError, AzureError):  # sent, not marked: sent again later, with the same id
            log.warning("project %s: budget warnings of %s sent, not yet marked sent", project, name)

    def month(self, project: str, month: str) -> Month:
        """The project's totals for ``month`` (``yyyy-mm``): one read."""
        return self._read(self._blob(project, month))[0]

    def between(self, project: str, start: date, end: date) -> tuple[str | None, dict[str, Day]]:
        """The currency and the days from ``start`` to ``end`` (inclusive): one read per month."""
        currency, days = None, {}
        for name in months_between(start, end):
            month = self.month(project, name)
            currency = currency or month.currency
            days.update({d: v for d, v in month.days.items() if start.isoformat() <= d <= end.isoformat() and v.jobs})
        return currency, dict(sorted(days.items()))

    def of_group(self, project: str, group: str, start: date, end: date) -> GroupCost:
        """What the ended items of ``group`` (every attempt) cost, from its totals: one read per month."""
        currency, days = self.between(project, start, end)
        amount = sum((day.by.get("group", {}).get(group, Decimal(0)) for day in days.values()), Decimal(0))
        unpriced = sum(day.unpriced_by.get("group", {}).get(group, 0) for day in days.values())
        return GroupCost(currency, amount, unpriced)

    def _blob(self, project: str, month: str) -> Any:
        return self._container.get_blob_client(f"{PREFIX}/{project}/{month}.json")

    @staticmethod
    def _read(blob: Any) -> tuple[Month, str | None]:
        try:
            download = blob.download_blob()
        except ResourceNotFoundError:
            return Month(), None
        return Month.load(download.readall()), str(download.properties.etag)
