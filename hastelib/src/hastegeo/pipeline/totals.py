"""Running totals of what a project's jobs cost: one document per project and month, kept as jobs end.

``costs/<project>/<yyyy-mm>.json`` in the jobs container holds, per day (the UTC day the job ended),
the amount and the number of jobs, by backend, by workload and by group, with the jobs whose cost was
not known counted apart (never as 0), and the ids of the jobs it counts.

A job that ended is not written into it by the step that ended it: that step (the journal's step 2,
:class:`hastegeo.pipeline.journal.JobJournal`) leaves one *marker*, an empty blob
``costs-pending/<project>/<yyyy-mm>/<job id>`` whose metadata carry what the totals need of the job
(its day, amount, currency and breakdowns) and the names of the job's ``active/`` and due entries: one
call, no read, and nothing every job of a project contends for. The next write of the month (the
reconciler's pass folds every marker each run, :meth:`CostTotals.fold`) adds the marked jobs with its
ETag-checked write and only then deletes the markers and the entries they name (the retire the step
left to it). Readers add the month's markers to what the document says, so a range reads what has
ended without waiting for the fold. The document names the jobs it counts, so a marker written twice
(a redelivered message, the reconciler's repair) or folded twice (a crash before its delete) counts
once. Reading a range costs one read and one listing per month in it, whatever the number of jobs
(docs/adr/0042, docs/adr/0051).
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import Any

from azure.core import MatchConditions
from azure.core.exceptions import AzureError, ResourceExistsError, ResourceModifiedError, ResourceNotFoundError
from azure.storage.blob import ContainerClient, ContentSettings

from hastegeo.models.job import Job
from hastegeo.utils.backoff import tries
from hastegeo.utils.errors import ConflictError
from hastegeo.utils.side_by_side import each

log = logging.getLogger(__name__)

PREFIX = "costs"
PENDING = "costs-pending"  # the markers of ended jobs not yet in their month's document
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

    def add(self, keys: dict[str, str], amount: Decimal | None) -> None:
        self.jobs += 1
        if amount is None:
            self.unpriced += 1
        else:
            self.amount += amount
        for name in BREAKDOWNS:
            key = keys.get(name)
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


@dataclass(frozen=True)
class Ended:
    """What the totals need of one ended job: its id, the UTC day it ended, its cost, its breakdowns.

    ``retire``: the index entries its marker stands in for (deleted once the job is in the document).
    """

    job_id: str
    day: str
    amount: Decimal | None
    currency: str | None
    keys: dict[str, str]
    retire: tuple[str, ...] = ()

    @classmethod
    def of(cls, job: Job, retire: Sequence[str] = ()) -> Ended | None:
        """The facts of an ended ``job`` (None: it has no end time)."""
        if job.finished_at is None:
            return None
        cost = job.cost
        keys = {name: key for name, key_of in BREAKDOWNS.items() if (key := key_of(job))}
        amount = None if cost is None else cost.amount
        currency = None if cost is None or amount is None else cost.currency
        return cls(job.id, job.finished_at.date().isoformat(), amount, currency, keys, tuple(retire))

    def metadata(self) -> dict[str, str]:
        """The marker's metadata (blob metadata: ASCII names and values; pure)."""
        found = {"day": self.day, **{f"by{name}": key for name, key in self.keys.items()}}
        if self.amount is not None:
            found["amount"] = str(self.amount)
        if self.currency is not None:
            found["currency"] = self.currency
        if self.retire:
            found["retire"] = " ".join(self.retire)
        return found

    @classmethod
    def from_marker(cls, job_id: str, metadata: dict[str, str]) -> Ended:
        """The facts a marker's metadata carry (names compared without case: storage may change it)."""
        meta = {name.lower(): value for name, value in metadata.items()}
        amount = meta.get("amount")
        return cls(
            job_id=job_id,
            day=meta["day"],
            amount=None if amount is None else Decimal(amount),
            currency=meta.get("currency"),
            keys={name: meta[f"by{name}"] for name in BREAKDOWNS if meta.get(f"by{name}")},
            retire=tuple(meta.get("retire", "").split()),
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
        fact = Ended.of(job)
        return fact is not None and self.count(fact)

    def count(self, fact: Ended) -> bool:
        """Count an ended job once; False when it was counted already."""
        if fact.job_id in self.counted:
            return False
        self.counted.add(fact.job_id)
        amount = fact.amount
        if amount is not None:
            if self.currency is None:
                self.currency = fact.currency
            elif fact.currency != self.currency:
                amount = None  # another currency: counted apart, never summed with these
        self.days.setdefault(fact.day, Day()).add(fact.keys, amount)
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

    def add(self, job: Job, retire: Sequence[str] = ()) -> bool:
        """Mark an ended job for its project's month: one write, no read (the next write of the month adds it,
        once); ``retire``: the index entries to delete once it is added. True when a marker was written.

        Raises:
            AzureError: storage failed (the caller leaves the job to the reconciler's sweep).
        """
        fact = Ended.of(job, retire)
        if fact is None or not job.state.terminal:
            return False
        self._container.upload_blob(
            self._marker(job.project_id, fact.day[:7], job.id),
            b"",
            overwrite=True,
            metadata=fact.metadata(),
        )
        return True

    def fold(self) -> int:
        """Add every marked job to its month (one ETag write per project and month), then delete the markers
        and the entries they name: the reconciler's pass. Returns the number of markers folded.

        Raises:
            ConflictError: a month's document kept changing (the next pass folds it).
            AzureError: storage failed.
        """
        months: defaultdict[tuple[str, str], list[Ended]] = defaultdict(list)
        for blob in self._container.list_blobs(name_starts_with=f"{PENDING}/", include=["metadata"]):
            parts = str(blob.name).split("/")
            fact = _marked(parts[-1], blob) if len(parts) == 4 else None
            if fact is not None:
                months[(parts[1], parts[2])].append(fact)
        for (project, name), marked in months.items():
            self._change(project, name, lambda _: False, marked)
        return sum(len(marked) for marked in months.values())

    def commit(self, project: str, month: str, committed: Decimal) -> bool:
        """Record the project's running jobs' expected cost so far (the reconciler's pass); True when it changed."""

        def change(current: Month) -> bool:
            if current.committed == committed:
                return False
            current.committed = committed
            return True

        return self.change(project, month, change)

    def change(self, project: str, name: str, change: Callable[[Month], bool]) -> bool:
        """Apply ``change`` (False: nothing to write) to the project's month by ETag; True when it wrote.

        The write adds the month's marked jobs too (:meth:`add`), and deletes their markers after it.
        """
        return self._change(project, name, change, None)

    def _change(self, project: str, name: str, change: Callable[[Month], bool], marked: Sequence[Ended] | None) -> bool:
        """:meth:`change`, adding ``marked`` (None: the month's markers, listed here)."""
        blob = self._blob(project, name)
        budget = self._budget_of(project) if self._budget_of is not None and self._levels else None
        marked = self._pending(project, name) if marked is None else marked
        for _ in tries(self._max_attempts):  # a lost ETag check waits a random, growing time first
            month, etag = self._read(blob)
            added = [fact.job_id for fact in marked if month.count(fact)]
            if not change(month) and not added:
                self._drop(project, name, marked)  # every marked job is in the document already
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
            self._drop(project, name, marked)
            self._tell(project, name, month)
            return True
        raise ConflictError(f"The cost totals of project {project} changed too often to update; try again")

    def _pending(self, project: str, name: str) -> list[Ended]:
        """The month's marked jobs (one listing)."""
        prefix = f"{PENDING}/{project}/{name}/"
        listed = self._container.list_blobs(name_starts_with=prefix, include=["metadata"])
        return [fact for blob in listed if (fact := _marked(str(blob.name).removeprefix(prefix), blob)) is not None]

    def _drop(self, project: str, name: str, marked: Iterable[Ended]) -> None:
        """Delete the markers of jobs the document now counts, and the entries each names; best effort
        (one left is found again by the next fold, which counts nothing twice)."""
        blobs = [blob for fact in marked for blob in (*fact.retire, self._marker(project, name, fact.job_id))]
        # A pass folds the jobs of a minute: side by side; one job's two blobs on this thread.
        each(self._delete, blobs, at_once=8, name="totals-drop", alone=2)

    def _delete(self, name: str) -> None:
        try:
            self._container.delete_blob(name)
        except ResourceNotFoundError:
            pass
        except AzureError as exc:
            log.info("cost totals: %s not deleted yet (%s); the next fold retries", name, type(exc).__name__)

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

    def month(self, project: str, month: str, *, pending: bool = True) -> Month:
        """The project's totals for ``month`` (``yyyy-mm``), with the jobs marked and not yet added (one read
        and one listing; ``pending=False``: the document alone, one read)."""
        found = self._read(self._blob(project, month))[0]
        if pending:
            for fact in self._pending(project, month):
                found.count(fact)
        return found

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
    def _marker(project: str, month: str, job_id: str) -> str:
        return f"{PENDING}/{project}/{month}/{job_id}"

    @staticmethod
    def _read(blob: Any) -> tuple[Month, str | None]:
        try:
            download = blob.download_blob()
        except ResourceNotFoundError:
            return Month(), None
        return Month.load(download.readall()), str(download.properties.etag)


def _marked(job_id: str, blob: Any) -> Ended | None:
    """The facts of a listed marker; None (logged, left for an operator) when its metadata do not read."""
    try:
        return Ended.from_marker(job_id, dict(blob.metadata or {}))
    except (KeyError, ArithmeticError) as exc:
        log.warning("cost totals: marker %s cannot be read (%s); left in place", blob.name, type(exc).__name__)
        return None
