"""What an attempt, a job and a group cost: pure functions of what the compute was and a price table.

One attempt is one run of the job's compute on one backend (a Batch task requeued after a
preemption is two; a job that failed over to another backend has one on each)::

    Azure Batch  run time × the node's price per hour × task slots used ÷ task slots per node
                 (Batch bills nodes, not tasks: the task's share is *attributed*)
    Azure ML     run time × the instance type's price per hour × instance count
    local        run time × slots × a configured rate per slot-hour (default 0, and said so)

Dedicated compute is priced at the pay-as-you-go meter, spot and low-priority compute at the spot
meter of the table. A price the table cannot give (a region it does not cover, a VM size it does
not list) makes the amount ``None`` with the reason, never 0; a job or group with such an attempt
has no total either (its attempts still carry what is known). Amounts are exact
:class:`~decimal.Decimal`; :meth:`Cost.display` rounds to the cent. docs/adr/0038.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from hastegeo.costs.prices import PriceTable, Priority

SECONDS_PER_HOUR = Decimal(3600)
CENT = Decimal("0.01")


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, alias_generator=to_camel, extra="forbid", frozen=True)


class _Run(_Model):
    started_at: datetime = Field(description="When the attempt's compute started (the task, the run).")
    ended_at: datetime = Field(description="When it ended (succeeded, failed, preempted or cancelled).")

    @model_validator(mode="after")
    def _ends_after_start(self) -> _Run:
        if (self.started_at.tzinfo is None) != (self.ended_at.tzinfo is None):
            raise ValueError("startedAt and endedAt must both carry a time zone, or neither")
        if self.ended_at < self.started_at:
            raise ValueError("endedAt is before startedAt")
        return self

    def seconds(self) -> Decimal:
        """The run time, exact to the microsecond."""
        delta = self.ended_at - self.started_at
        return Decimal(delta.days * 86400 + delta.seconds) + Decimal(delta.microseconds) / Decimal(1_000_000)


class BatchAttempt(_Run):
    """A Batch task's run on a pool: what the Batch adapter reports (the pool's and the task's own fields)."""

    backend: Literal["azure_batch"] = "azure_batch"
    region: str = Field(description="The Batch account's region (armRegionName).")
    vm_size: str = Field(description="The pool's vmSize.")
    priority: Priority = Field(description="dedicated, or spot for a low-priority/spot node.")
    task_slots_per_node: int = Field(1, ge=1, description="The pool's taskSlotsPerNode.")
    task_slots: int = Field(1, ge=1, description="The task's requiredSlots.")

    @model_validator(mode="after")
    def _fits_a_node(self) -> BatchAttempt:
        if self.task_slots > self.task_slots_per_node:
            raise ValueError(f"taskSlots {self.task_slots} exceed the pool's taskSlotsPerNode")
        return self


class AmlAttempt(_Run):
    """An Azure ML job's run on a compute cluster: what the Azure ML adapter reports."""

    backend: Literal["azure_ml"] = "azure_ml"
    region: str = Field(description="The workspace's region (armRegionName).")
    instance_type: str = Field(description="The cluster's VM size.")
    instance_count: int = Field(1, ge=1, description="Instances the job ran on.")
    tier: Priority = Field(description="dedicated, or spot for a low-priority cluster.")


class LocalAttempt(_Run):
    """A local process: priced at the configured rate per slot-hour."""

    backend: Literal["local"] = "local"
    slots: int = Field(1, ge=1, description="Slots the process held.")


Attempt = Annotated[BatchAttempt | AmlAttempt | LocalAttempt, Field(discriminator="backend")]


class Basis(enum.StrEnum):
    """How an amount was arrived at."""

    ATTRIBUTED = "attributed"  # a share of a node billed as a whole (Batch)
    METERED = "metered"  # the instances the job held, at their price (Azure ML)
    CONFIGURED = "configured"  # a rate the operator set (local)


class AttemptCost(_Model):
    """What one attempt cost, or ``amount=None`` and why; the price used, its source and date either way."""

    backend: str
    seconds: Decimal = Field(description="Run time of the attempt (s).")
    amount: Decimal | None = Field(description="Exact cost in `currency`; null when a price is not known.")
    currency: str | None
    basis: Basis
    reason: str | None = Field(None, description="Why the amount is null.")
    note: str | None = Field(None, description="What a reader must know, e.g. that a rate is the default 0.")
    unit: str = Field(description="What the unit price is per: node-hour, instance-hour or slot-hour.")
    unit_price: Decimal | None = Field(description="Price per unit used.")
    units: Decimal = Field(description="Units billed to this attempt: node-hours × share, instance-hours, slot-hours.")
    sku: str | None = None
    region: str | None = None
    priority: Priority | None = None
    price_source: str | None = Field(None, description="Where the unit price came from.")
    price_date: date | None = Field(None, description="The day the unit price was taken (the table's date).")
    price_since: date | None = Field(None, description="Since when the meter had that price, when known.")


class Cost(_Model):
    """A job's (or a group's) cost: the sum of its attempts, or ``amount=None`` when one is not known."""

    amount: Decimal | None = Field(description="Exact sum in `currency`; null when any part is not known.")
    currency: str | None
    reason: str | None = Field(None, description="Why the amount is null.")
    attributed: bool = Field(description="Whether some part is a share of shared compute (Batch nodes).")
    attempts: list[AttemptCost] = Field(default_factory=list)

    def display(self) -> str:
        """``0.10 USD`` (rounded half up to the cent), or ``unknown: <reason>``."""
        if self.amount is None:
            return f"unknown: {self.reason}"
        return f"{to_cents(self.amount)} {self.currency}"


def _plain(value: Decimal) -> Decimal:
    """``value`` without trailing zeros, never in exponent form (``0.09600`` → ``0.096``, ``1E+1`` → ``10``)."""
    normal = value.normalize()
    return normal if normal.as_tuple().exponent <= 0 else normal.quantize(Decimal(1))  # type: ignore[operator]


def _per_hour(seconds: Decimal, numerator: int, denominator: int, price: Decimal = Decimal(1)) -> Decimal:
    """``seconds / 3600 × numerator / denominator × price`` with one division, last: exact whenever the
    result has a finite decimal form (28 significant digits otherwise)."""
    return _plain(seconds * numerator * price / (SECONDS_PER_HOUR * denominator))


def to_cents(amount: Decimal) -> Decimal:
    """``amount`` rounded half up to the cent, for display only."""
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)


def _priced(
    attempt: BatchAttempt | AmlAttempt,
    table: PriceTable,
    *,
    sku: str,
    priority: Priority,
    share: tuple[int, int],
    unit: str,
    basis: Basis,
) -> AttemptCost:
    found = table.lookup(attempt.region, sku, priority)
    seconds = attempt.seconds()
    common = {
        "backend": attempt.backend,
        "seconds": _plain(seconds),
        "basis": basis,
        "unit": unit,
        "units": _per_hour(seconds, *share),
        "sku": sku,
        "region": attempt.region,
        "priority": priority,
        "price_source": table.source,
        "price_date": table.taken_at,
    }
    if found.per_hour is None:
        return AttemptCost(amount=None, currency=None, unit_price=None, reason=found.reason, **common)
    return AttemptCost(
        amount=_per_hour(seconds, *share, found.per_hour),
        currency=table.currency,
        unit_price=found.per_hour,
        price_since=found.since,
        **common,
    )


def attempt_cost(
    attempt: BatchAttempt | AmlAttempt | LocalAttempt,
    table: PriceTable,
    *,
    local_rate: Decimal = Decimal(0),
    local_rate_setting: str = "HASTE_LOCAL_PRICE_PER_SLOT_HOUR",
) -> AttemptCost:
    """What ``attempt`` cost at ``table``'s prices (``local_rate`` per slot-hour, in the table's currency,
    for a local attempt; ``local_rate_setting`` names where it comes from in the note)."""
    if isinstance(attempt, BatchAttempt):
        return _priced(
            attempt,
            table,
            sku=attempt.vm_size,
            priority=attempt.priority,
            share=(attempt.task_slots, attempt.task_slots_per_node),
            unit="node-hour",
            basis=Basis.ATTRIBUTED,
        )
    if isinstance(attempt, AmlAttempt):
        return _priced(
            attempt,
            table,
            sku=attempt.instance_type,
            priority=attempt.tier,
            share=(attempt.instance_count, 1),
            unit="instance-hour",
            basis=Basis.METERED,
        )
    seconds = attempt.seconds()
    note = f"local compute at {local_rate} {table.currency} per slot-hour ({local_rate_setting})"
    if local_rate == 0:
        note = f"local compute is priced at 0 (the default of {local_rate_setting}), not measured"
    return AttemptCost(
        backend=attempt.backend,
        seconds=_plain(seconds),
        amount=_per_hour(seconds, attempt.slots, 1, local_rate),
        currency=table.currency,
        basis=Basis.CONFIGURED,
        note=note,
        unit="slot-hour",
        unit_price=local_rate,
        units=_per_hour(seconds, attempt.slots, 1),
        price_source=local_rate_setting,
    )


def _add(
    parts: Sequence[tuple[str, Decimal | None, str | None, str | None]],
) -> tuple[Decimal | None, str | None, str | None]:
    """``(amount, currency, reason)`` of ``(label, amount, currency, reason)`` parts: no total when a part has
    none (the reason names each such part) or when they are in different currencies."""
    unknown = [f"{label}: {reason}" for label, amount, _, reason in parts if amount is None]
    if unknown:
        return None, None, "; ".join(unknown)
    currencies = sorted({currency for _, _, currency, _ in parts if currency})
    if len(currencies) > 1:
        return None, None, f"the parts are in different currencies ({', '.join(currencies)})"
    total = _plain(sum((amount for _, amount, _, _ in parts if amount is not None), Decimal(0)))
    return total, (currencies[0] if currencies else None), None


def job_cost(
    attempts: Sequence[BatchAttempt | AmlAttempt | LocalAttempt],
    table: PriceTable,
    *,
    local_rate: Decimal = Decimal(0),
    local_rate_setting: str = "HASTE_LOCAL_PRICE_PER_SLOT_HOUR",
) -> Cost:
    """A job's cost: every attempt (retries, preemptions, fail-over) priced and summed.

    A job with no attempt (it never got compute) costs 0 in the table's currency.
    """
    parts = [
        attempt_cost(attempt, table, local_rate=local_rate, local_rate_setting=local_rate_setting)
        for attempt in attempts
    ]
    amount, currency, reason = _add(
        [(f"attempt {n} ({part.backend})", part.amount, part.currency, part.reason) for n, part in enumerate(parts, 1)]
    )
    return Cost(
        amount=amount,
        currency=currency if parts else table.currency,
        reason=reason,
        attributed=any(part.basis is Basis.ATTRIBUTED for part in parts),
        attempts=parts,
    )


def unknown_cost(reason: str) -> Cost:
    """A cost that cannot be computed at all (e.g. the price table could not be read)."""
    return Cost(amount=None, currency=None, reason=reason, attributed=False)


def total_cost(costs: Iterable[Cost], labels: Iterable[str] | None = None) -> Cost:
    """The sum of several jobs' costs (a group's items, a job and its reruns); ``labels`` name them in a
    reason (default: their position). Attempts are not repeated in the total."""
    listed = list(costs)
    names = list(labels) if labels is not None else [f"part {n}" for n in range(1, len(listed) + 1)]
    amount, currency, reason = _add(
        [(name, cost.amount, cost.currency, cost.reason) for name, cost in zip(names, listed, strict=True)]
    )
    return Cost(amount=amount, currency=currency, reason=reason, attributed=any(c.attributed for c in listed))
