"""How long a writer waits before it tries an ETag-conditional write again, after another writer won.

Retried at once, writers of one document that all lost the same round meet again in the next one, each
costing a read and a failed write per round. Waiting a random time (full jitter) spreads them out, and
the bound grows with each loss so a busy document is tried less often; the first retry still comes
within milliseconds, so a writer that lost once is barely delayed.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator

FIRST_S = 0.01  # the longest wait after the first loss
MOST_S = 0.5  # the longest wait after any loss


def conflict_delay(losses: int, draw: float, *, first: float = FIRST_S, most: float = MOST_S) -> float:
    """The wait before the next try after ``losses`` (1 or more) lost writes: ``draw`` (uniform in [0, 1))
    times ``first`` doubled per earlier loss, capped at ``most``."""
    return draw * min(most, first * (1 << min(losses - 1, 32)))


def tries(
    most: int, *, sleep: Callable[[float], None] = time.sleep, draw: Callable[[], float] = random.random
) -> Iterator[int]:
    """The tries of an ETag-conditional read-modify-write of a shared document (0 to ``most`` - 1), each one
    after the first coming after a :func:`conflict_delay`: the loop of every store whose one document many
    writers change (a group, the admission book, a project's month of cost totals)."""
    for attempt in range(most):
        if attempt:
            sleep(conflict_delay(attempt, draw()))
        yield attempt
