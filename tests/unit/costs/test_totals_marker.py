"""A totals marker's metadata carry what the month needs of an ended job, and read back the same (pure)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from hastegeo.costs.attribution import Cost
from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.pipeline.totals import Ended, Month
from tests.support.jobs import job_document

AT = datetime(2026, 12, 31, 23, 59, tzinfo=UTC)


def job(cost: Cost | None, **fields: object) -> Job:
    """Job ``j-1``, ended on Batch at ``AT`` with ``cost``."""
    return job_document(AT, JobState.SUCCEEDED, backend="azure_batch", finished_at=AT, cost=cost, **fields)


def test_a_priced_job_round_trips_with_the_entries_it_retires() -> None:
    priced = job(Cost(amount=Decimal("0.0127"), currency="USD", attributed=True), group_id="g1")
    fact = Ended.of(priced, ["active/p1/8203374088842-j-1"])
    assert fact is not None
    # Storage may hand metadata names back in another case.
    back = Ended.from_marker("j-1", {name.upper(): value for name, value in fact.metadata().items()})
    assert back == fact
    assert back.keys == {"backend": "azure_batch", "workload": "artifacts", "group": "g1"}
    month = Month()
    assert month.count(back)
    assert not month.count(back)
    assert (month.total(), list(month.days)) == (Decimal("0.0127"), ["2026-12-31"])


def test_an_unpriced_job_is_counted_apart_never_as_zero() -> None:
    fact = Ended.of(job(Cost(amount=None, currency=None, reason="no price", attributed=False)))
    assert fact is not None
    assert "amount" not in fact.metadata()
    assert "retire" not in fact.metadata()
    month = Month()
    month.count(Ended.from_marker("j-1", fact.metadata()))
    assert (month.total(), month.days["2026-12-31"].unpriced) == (Decimal(0), 1)


def test_a_job_without_an_end_has_no_marker() -> None:
    assert Ended.of(job(None).model_copy(update={"finished_at": None})) is None
