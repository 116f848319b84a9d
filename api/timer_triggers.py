"""Timer triggers: the reconciler that gives every job a deadline and stops orphaned provider jobs."""

from __future__ import annotations

import logging

import azure.functions as func

from hastegeo.runtime import get_runtime

log = logging.getLogger(__name__)
bp = func.Blueprint()  # type: ignore[no-untyped-call]


@bp.timer_trigger(schedule="0 */1 * * * *", arg_name="timer", run_on_startup=False, use_monitor=False)
def reconcile(timer: func.TimerRequest) -> None:
    report = get_runtime().reconcile.run()
    if timer.past_due:
        log.info("reconcile ran late: %s", report.summary())
