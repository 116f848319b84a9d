"""NCRONTAB parsing and next-fire computation for the development host's timers."""

from __future__ import annotations

from datetime import datetime

import pytest

from hastegeo_dev.devhost.timers import next_fire, parse_schedule


def test_every_minute_on_second_zero() -> None:
    schedule = parse_schedule("0 */1 * * * *")
    assert next_fire(schedule, datetime(2026, 11, 30, 8, 15, 42)) == datetime(2026, 11, 30, 8, 16, 0)
    assert next_fire(schedule, datetime(2026, 11, 30, 8, 16, 0)) == datetime(2026, 11, 30, 8, 17, 0)


def test_steps_ranges_and_lists() -> None:
    schedule = parse_schedule("*/15 0-5 9,17 * * *")
    assert next_fire(schedule, datetime(2026, 11, 30, 8, 59, 59)) == datetime(2026, 11, 30, 9, 0, 0)
    assert next_fire(schedule, datetime(2026, 11, 30, 9, 5, 50)) == datetime(2026, 11, 30, 17, 0, 0)


def test_day_of_week_counts_sunday_as_zero() -> None:
    sundays = parse_schedule("0 0 12 * * 0")
    assert next_fire(sundays, datetime(2026, 11, 30, 0, 0)).weekday() == 6  # 2026-12-06 is a Sunday


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ("* * * * *", "six fields"),
        ("60 * * * * *", "outside 0-59"),
        ("0 0 24 * * *", "outside 0-23"),
        ("0 */0 * * * *", "outside 0-59"),
        ("x * * * * *", "invalid literal"),
    ],
)
def test_bad_schedules(schedule: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_schedule(schedule)
