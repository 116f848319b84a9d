"""Timer triggers: NCRONTAB schedules (``sec min hour day month day-of-week``), run on a thread.

The platform runs each timer function as a singleton across instances; the
development host runs timers in its main process only (worker processes
started for queues run none). Supported field syntax: ``*``, ``*/n``,
numbers, ranges ``a-b`` and comma lists — what schedules in practice use.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta

from azure.functions.timer import TimerRequest

from hastegeo_dev.devhost.functions import TimerSpec, invoke

log = logging.getLogger(__name__)

_RANGES = ((0, 59), (0, 59), (0, 23), (1, 31), (1, 12), (0, 6))


def parse_schedule(schedule: str) -> tuple[frozenset[int], ...]:
    """The allowed values of each of the six fields.

    Raises:
        ValueError: not six fields, or a field outside its range.
    """
    fields = schedule.split()
    if len(fields) != 6:
        raise ValueError(f"NCRONTAB needs six fields (sec min hour day month dow), got {schedule!r}")
    return tuple(_field(text, low, high) for text, (low, high) in zip(fields, _RANGES, strict=True))


def _field(text: str, low: int, high: int) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        base, _, step_text = part.partition("/")
        step = int(step_text) if step_text else 1
        if base == "*":
            start, end = low, high
        elif "-" in base:
            first, last = base.split("-", 1)
            start, end = int(first), int(last)
        else:
            start = end = int(base)
        if not (low <= start <= end <= high) or step < 1:
            raise ValueError(f"{part!r} is outside {low}-{high}")
        values.update(range(start, end + 1, step))
    return frozenset(values)


def next_fire(schedule: tuple[frozenset[int], ...], after: datetime) -> datetime:
    """The first whole second strictly after ``after`` that the schedule allows (within a year)."""
    seconds, minutes, hours, days, months, weekdays = schedule
    moment = after.replace(microsecond=0) + timedelta(seconds=1)
    limit = moment + timedelta(days=366)
    while moment < limit:
        if moment.month not in months or moment.day not in days or (moment.weekday() + 1) % 7 not in weekdays:
            moment = (moment + timedelta(days=1)).replace(hour=0, minute=0, second=0)
        elif moment.hour not in hours:
            moment = (moment + timedelta(hours=1)).replace(minute=0, second=0)
        elif moment.minute not in minutes:
            moment = (moment + timedelta(minutes=1)).replace(second=0)
        elif moment.second not in seconds:
            moment += timedelta(seconds=1)
        else:
            return moment
    raise ValueError("the schedule never fires")


class TimerDriver:
    """Runs one timer function on its schedule until stopped. A failing run is logged, never fatal."""

    def __init__(self, function: TimerSpec) -> None:
        self.function = function
        self._schedule = parse_schedule(function.schedule)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"timer-{function.name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        if self.function.run_on_startup:
            self._fire(past_due=False)
        while not self._stop.is_set():
            now = datetime.now().astimezone()
            due = next_fire(self._schedule, now)
            if self._stop.wait((due - now).total_seconds()):
                return
            late = (datetime.now().astimezone() - due).total_seconds() > 60
            self._fire(past_due=late)

    def _fire(self, past_due: bool) -> None:
        request = TimerRequest(past_due=past_due)
        try:
            invoke(self.function.handler, self.function.name, self.function.arg_name, request, {})
        except Exception:
            log.exception("timer %s failed; it runs again at its next time", self.function.name)
