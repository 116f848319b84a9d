"""Waiting in tests for something another thread or process does: poll, and fail saying what never came."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_for(
    condition: Callable[[], object], timeout: float = 20.0, what: str = "the condition", every: float = 0.02
) -> None:
    """Return once ``condition()`` is true; fail after ``timeout`` seconds naming ``what``."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout:g}s")
        time.sleep(every)
