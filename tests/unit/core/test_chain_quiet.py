"""When the reconciler takes a job's poll chain for lost (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hastegeo.pipeline.reconcile import CHAIN_GRACE_S, chain_quiet

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def due_in(seconds: float) -> datetime:
    return NOW + timedelta(seconds=seconds)


def test_a_chain_is_left_alone_until_its_message_is_overdue_past_the_grace() -> None:
    assert not chain_quiet(due_in(30), NOW)  # due later
    assert not chain_quiet(due_in(0), NOW)
    assert not chain_quiet(due_in(-CHAIN_GRACE_S), NOW)  # overdue by the grace exactly
    assert chain_quiet(due_in(-CHAIN_GRACE_S - 1), NOW)


def test_a_record_without_a_due_time_is_rearmed_as_before() -> None:
    """Written before the due time was kept, or by the release before it (which drops the unknown field)."""
    assert chain_quiet(None, NOW)
