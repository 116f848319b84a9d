"""A job's cost on the local backend, to the cent, and its project's totals (Azurite, the real local backend)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from hastegeo.costs.attribution import to_cents
from hastegeo.models.states import JobState
from hastegeo.pipeline.accept import parse_request
from hastegeo.store.queues import JobMessage
from tests.conftest import RuntimeFactory
from tests.integration.conftest import drive, put_input, request

pytestmark = pytest.mark.azurite
RATE = Decimal("36")  # per slot-hour: a cent a second, so seconds read as cents


def test_a_local_job_costs_its_run_time_at_the_configured_rate(make_runtime: RuntimeFactory) -> None:
    runtime = make_runtime(HASTE_LOCAL_PRICE_PER_SLOT_HOUR=str(RATE))
    put_input(runtime, "p1/a.txt", b"alpha")
    job = runtime.acceptor.accept(parse_request(request())).job
    runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
    ended = drive(runtime, job.id)
    assert ended.state is JobState.SUCCEEDED, ended.reason
    assert ended.cost is not None
    assert ended.usage is not None
    [run] = ended.usage.runs
    assert not run.open
    seconds = run.attempt.seconds()
    assert ended.cost.amount == seconds * RATE / 3600
    assert ended.cost.currency == "USD"
    [attempt] = ended.cost.attempts
    assert (attempt.backend, attempt.unit, attempt.unit_price) == ("local", "slot-hour", RATE)
    assert to_cents(ended.cost.amount) == to_cents(seconds / 100)
    assert "cost" in ended.api_view()
    assert "usage" not in ended.api_view()
    month = runtime.journal.totals.month("p1", ended.finished_at.strftime("%Y-%m"))  # type: ignore[union-attr]
    [day] = month.days.values()
    assert (day.amount, day.jobs, day.unpriced, month.counted) == (ended.cost.amount, 1, 0, {job.id})
    assert day.by["backend"] == {"local": ended.cost.amount}
