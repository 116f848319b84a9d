"""A token bucket: the admission rule for submissions, pure and clock-injected.

Each API instance keeps its own bucket, so the limit is per instance; the
platform's scale-out multiplies it. That is the point: the limit protects
what one instance can accept and enqueue, and a refused caller is told when
to come back (``Retry-After``) instead of being queued without bound.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable


class TokenBucket:
    def __init__(self, rate_per_s: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        if rate_per_s < 0 or burst < 1:
            raise ValueError("rate must be >= 0 and burst >= 1")
        self._rate = rate_per_s
        self._burst = float(burst)
        self._tokens = float(burst)
        self._clock = clock
        self._stamp = clock()
        self._lock = threading.Lock()

    @property
    def unlimited(self) -> bool:
        return self._rate == 0

    def take(self) -> float:
        """Take one token. Returns 0 when admitted, else the seconds to wait before one is free."""
        if self.unlimited:
            return 0.0
        with self._lock:
            now = self._clock()
            self._tokens = min(self._burst, self._tokens + (now - self._stamp) * self._rate)
            self._stamp = now
            if self._tokens >= 1:
                self._tokens -= 1
                return 0.0
            return (1 - self._tokens) / self._rate

    @staticmethod
    def retry_after(wait_s: float) -> str:
        """The ``Retry-After`` header value: whole seconds, at least 1."""
        return str(max(1, math.ceil(wait_s)))
