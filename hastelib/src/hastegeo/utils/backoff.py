"""How long a writer waits before it tries an ETag-conditional write again, after another writer won.

Retried at once, writers of one document that all lost the same round meet again in the next one, each
costing a read and a failed write per round. Waiting a random time (full jitter) spreads them out, and
the bound grows with each loss so a busy document is tried less often; the first retry still comes
within milliseconds, so a writer that lost once is barely delayed.
"""

from __future__ import annotations

FIRST_S = 0.01  # the longest wait after the first loss
MOST_S = 0.5  # the longest wait after any loss


def conflict_delay(losses: int, draw: float, *, first: float = FIRST_S, most: float = MOST_S) -> float:
    """The wait before the next try after ``losses`` (1 or more) lost writes: ``draw`` (uniform in [0, 1))
    times ``first`` doubled per earlier loss, capped at ``most``."""
    return draw * min(most, first * (1 << min(losses - 1, 32)))
