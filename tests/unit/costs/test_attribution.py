"""What an attempt, a job and a group cost, to the cent, from a table written here (docs/adr/0038)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from hastegeo.costs.attribution import (
    AmlAttempt,
    Attempt,
    AttemptCost,
    Basis,
    BatchAttempt,
    Cost,
    LocalAttempt,
    attempt_cost,
    job_cost,
    to_cents,
    total_cost,
    unknown_cost,
)
from hastegeo.costs.prices import PriceTable, Priority

START = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
TABLE = PriceTable.model_validate(
    {
        "currency": "USD",
        "takenAt": "2026-12-01",
        "source": "a table written by the test",
        "regions": {
            "eastus": {
                "Standard_D8s_v3": {"dedicatedPerHour": "0.384", "spotPerHour": "0.0768", "spotSince": "2026-11-20"},
                "Standard_NC4as_T4_v3": {"dedicatedPerHour": "0.526", "spotPerHour": "0.1052"},
                "Standard_D2s_v3": {"dedicatedPerHour": "0.096"},
            }
        },
    }
)


def run(seconds: float) -> dict[str, datetime]:
    return {"started_at": START, "ended_at": START + timedelta(seconds=seconds)}


def batch(seconds: float = 3600, **fields: Any) -> BatchAttempt:
    values: dict[str, object] = {
        "region": "eastus",
        "vm_size": "Standard_D8s_v3",
        "priority": Priority.DEDICATED,
        "task_slots_per_node": 4,
        **run(seconds),
        **fields,
    }
    return BatchAttempt.model_validate(values)


def test_a_batch_task_is_its_share_of_the_node_to_the_cent() -> None:
    cost = attempt_cost(batch(3600), TABLE)
    assert cost.amount == Decimal("0.096")  # 1 h × 0.384/h ÷ 4 slots, exact
    assert (cost.basis, cost.unit, cost.unit_price, cost.units) == (
        Basis.ATTRIBUTED,
        "node-hour",
        Decimal("0.384"),
        Decimal("0.25"),
    )
    assert (cost.currency, cost.price_source, cost.price_date) == (
        "USD",
        "a table written by the test",
        date(2026, 12, 1),
    )
    assert job_cost([batch(3600)], TABLE).display() == "0.10 USD"


def test_a_task_holding_two_of_four_slots_pays_half_the_node() -> None:
    assert attempt_cost(batch(1800, task_slots=2), TABLE).amount == Decimal("0.096")
    with pytest.raises(ValidationError, match="exceed"):
        batch(task_slots=5)


def test_spot_and_low_priority_nodes_are_priced_at_the_spot_meter_with_its_date() -> None:
    cost = attempt_cost(batch(3600, priority=Priority.parse("LowPriority"), task_slots_per_node=1), TABLE)
    assert (cost.amount, cost.priority, cost.price_since) == (Decimal("0.0768"), Priority.SPOT, date(2026, 11, 20))


def test_a_preempted_and_requeued_task_is_billed_for_both_attempts() -> None:
    cost = job_cost([batch(1200, priority=Priority.SPOT), batch(3600, priority=Priority.SPOT)], TABLE)
    # 1,200 s + 3,600 s of a quarter of a 0.0768/h node: 0.00640 + 0.01920
    assert cost.amount == Decimal("0.0256")
    assert [part.amount for part in cost.attempts] == [Decimal("0.0064"), Decimal("0.0192")]
    assert cost.attributed


def test_an_azure_ml_run_is_instances_times_hours_times_the_tier_price() -> None:
    attempt = AmlAttempt(
        region="EastUS", instance_type="standard_nc4as_t4_v3", instance_count=2, tier=Priority.DEDICATED, **run(5400)
    )
    cost = attempt_cost(attempt, TABLE)
    assert cost.amount == Decimal("1.578")  # 2 × 1.5 h × 0.526
    assert (cost.basis, cost.unit, cost.units) == (Basis.METERED, "instance-hour", Decimal(3))
    assert not job_cost([attempt], TABLE).attributed


def test_local_compute_costs_the_configured_rate_and_says_when_it_is_the_default_zero() -> None:
    attempt = LocalAttempt(slots=2, **run(1800))
    free = attempt_cost(attempt, TABLE)
    assert free.amount == 0
    assert free.note
    assert "default" in free.note
    priced = attempt_cost(attempt, TABLE, local_rate=Decimal("0.05"))
    assert (priced.amount, priced.unit, priced.basis) == (Decimal("0.05"), "slot-hour", Basis.CONFIGURED)
    assert priced.note
    assert "default" not in priced.note


def test_a_job_that_failed_over_sums_both_backends() -> None:
    aml = AmlAttempt(region="eastus", instance_type="Standard_D2s_v3", tier=Priority.DEDICATED, **run(900))
    cost = job_cost([batch(3600), aml], TABLE)
    assert cost.amount == Decimal("0.096") + Decimal("0.024")
    assert [part.backend for part in cost.attempts] == ["azure_batch", "azure_ml"]


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"vm_size": "Standard_E64s_v5"}, "no VM size 'Standard_E64s_v5' in eastus"),
        ({"region": "southindia"}, "does not cover region 'southindia'"),
        ({"vm_size": "Standard_D2s_v3", "priority": Priority.SPOT}, "no spot price for Standard_D2s_v3"),
    ],
)
def test_a_price_that_cannot_be_known_is_none_with_the_reason_never_zero(fields: dict[str, Any], reason: str) -> None:
    part = attempt_cost(batch(**fields), TABLE)
    assert part.amount is None
    assert part.unit_price is None
    assert reason in (part.reason or "")
    cost = job_cost([batch(), batch(**fields)], TABLE)
    assert cost.amount is None
    assert cost.currency is None
    assert cost.reason
    assert cost.reason.startswith("attempt 2 (azure_batch): ")
    assert reason in cost.reason
    assert cost.attempts[0].amount == Decimal("0.096"), "what is known is kept, per attempt"
    assert cost.display().startswith("unknown: attempt 2")


def test_a_group_sums_its_items_and_is_unknown_if_one_is() -> None:
    one, two = job_cost([batch(3600)], TABLE), job_cost([batch(7200)], TABLE)
    group = total_cost([one, two])
    assert (group.amount, group.currency, group.attempts) == (Decimal("0.288"), "USD", [])
    lost = total_cost([one, unknown_cost("the price table could not be read")], labels=["j1", "j2"])
    assert (lost.amount, lost.reason) == (None, "j2: the price table could not be read")
    euros = Cost(amount=Decimal(1), currency="EUR", attributed=False)
    assert total_cost([one, euros]).reason == "the parts are in different currencies (EUR, USD)"


def test_a_job_that_never_ran_costs_zero_in_the_table_currency() -> None:
    assert job_cost([], TABLE) == Cost(amount=Decimal(0), currency="USD", attributed=False)


def test_amounts_stay_exact_and_round_half_up_only_for_display() -> None:
    cost = job_cost([batch(1)], TABLE)  # one second: 0.384 / 3600 / 4
    assert cost.amount == Decimal("0.384") / (3600 * 4)  # one division: as exact as a Decimal can be
    assert to_cents(Decimal("0.125")) == Decimal("0.13")
    assert to_cents(Decimal("0.0049")) == Decimal("0.00")
    assert cost.display() == "0.00 USD"


def test_attempts_come_from_backend_reports_by_their_backend_field_in_camel_case() -> None:
    reported = {
        "backend": "azure_batch",
        "region": "eastus",
        "vmSize": "standard_d8s_v3",
        "priority": "spot",
        "taskSlotsPerNode": 4,
        "startedAt": "2026-12-01T10:00:00Z",
        "endedAt": "2026-12-01T11:00:00Z",
    }
    attempt = TypeAdapter(Attempt).validate_python(reported)
    assert isinstance(attempt, BatchAttempt)
    assert attempt_cost(attempt, TABLE).amount == Decimal("0.0192")
    with pytest.raises(ValidationError, match="before"):
        TypeAdapter(Attempt).validate_python({**reported, "endedAt": "2026-12-01T09:00:00Z"})


def test_a_cost_travels_as_camel_case_json_with_exact_amounts() -> None:
    document = job_cost([batch(3600)], TABLE).model_dump(mode="json", by_alias=True)
    assert document["amount"] == "0.096"
    assert document["currency"] == "USD"
    assert document["attributed"] is True
    [part] = document["attempts"]
    assert (part["unitPrice"], part["priceSource"], part["priceDate"]) == (
        "0.384",
        "a table written by the test",
        "2026-12-01",
    )
    assert Cost.model_validate(document) == job_cost([batch(3600)], TABLE)
    assert AttemptCost.model_validate(part).amount == Decimal("0.096")
