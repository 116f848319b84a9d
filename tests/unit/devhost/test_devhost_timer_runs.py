"""A timer function really runs on its schedule in the development host, and stops with it."""

from __future__ import annotations

import threading
import time

import azure.functions as func

from hastegeo_dev.devhost.host import DevHost


def test_timer_fires_every_second_and_stops_with_the_host() -> None:
    fired: list[bool] = []
    seen = threading.Event()
    app = func.FunctionApp()

    @app.timer_trigger(schedule="* * * * * *", arg_name="timer")
    def every_second(timer: func.TimerRequest) -> None:
        fired.append(timer.past_due)
        if len(fired) >= 2:
            seen.set()

    host = DevHost(app, port=0, serve_http=False, run_queues=False, environ={}).start()
    try:
        assert seen.wait(5), fired
    finally:
        host.stop()
    count = len(fired)
    time.sleep(1.2)
    assert len(fired) == count  # nothing fires after stop()
    assert fired[0] is False
