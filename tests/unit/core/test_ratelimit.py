"""The submission token bucket, on a clock the test moves."""

from __future__ import annotations

import pytest

from hastegeo.utils.ratelimit import TokenBucket


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_burst_then_rate() -> None:
    clock = Clock()
    bucket = TokenBucket(rate_per_s=2, burst=3, clock=clock)
    assert [bucket.take() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.take() == pytest.approx(0.5)  # one token every half second
    clock.now += 0.5
    assert bucket.take() == 0.0
    clock.now += 10  # refills to the burst, not beyond
    assert [bucket.take() for _ in range(4)][:3] == [0.0, 0.0, 0.0]
    assert bucket.take() > 0


def test_zero_rate_means_no_limit() -> None:
    bucket = TokenBucket(rate_per_s=0, burst=1)
    assert all(bucket.take() == 0.0 for _ in range(1000))


def test_retry_after_is_whole_seconds_at_least_one() -> None:
    assert TokenBucket.retry_after(0.01) == "1"
    assert TokenBucket.retry_after(2.2) == "3"


def test_invalid_configuration() -> None:
    with pytest.raises(ValueError, match="burst"):
        TokenBucket(rate_per_s=1, burst=0)
