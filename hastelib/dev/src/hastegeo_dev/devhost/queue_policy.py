"""The queue-trigger rules of the Functions host, as pure functions.

What the queue driver does with a message (run it, retry it later, move it
to ``<queue>-poison``), when it fetches the next batch, how long it sleeps on
an empty queue and how message text maps to bytes are decisions worth
testing on their own: they are what makes local runs behave like Azure
(``maxDequeueCount``, ``newBatchThreshold``, ``maxPollingInterval``,
``messageEncoding``). The driver only does the I/O.
"""

from __future__ import annotations

import base64
import binascii
import json
from enum import Enum
from typing import Any

from hastegeo_dev.devhost.hostjson import MessageEncoding

POISON_SUFFIX = "-poison"
MIN_POLL_DELAY = 0.1  # seconds; the Functions host also starts its back-off near 100 ms


class OnReceive(Enum):
    PROCESS = "process"
    POISON = "poison"  # already dequeued more often than allowed: do not run it again


class OnFailure(Enum):
    RETRY = "retry"  # release with the visibility timeout; it comes back with dequeue_count + 1
    POISON = "poison"


def poison_queue_name(queue_name: str) -> str:
    return queue_name + POISON_SUFFIX


def on_receive(dequeue_count: int, max_dequeue_count: int) -> OnReceive:
    """A message dequeued more than ``max_dequeue_count`` times is poison before it runs."""
    return OnReceive.POISON if dequeue_count > max_dequeue_count else OnReceive.PROCESS


def on_failure(dequeue_count: int, max_dequeue_count: int) -> OnFailure:
    """A failed message that has used its last allowed dequeue goes to the poison queue."""
    return OnFailure.POISON if dequeue_count >= max_dequeue_count else OnFailure.RETRY


def fetch_size(in_flight: int, batch_size: int, new_batch_threshold: int) -> int:
    """How many messages to ask for now: a full batch once in-flight work drops to the threshold, else none."""
    return batch_size if in_flight <= new_batch_threshold else 0


def poll_delay(empty_polls: int, maximum: float, minimum: float = MIN_POLL_DELAY) -> float:
    """Seconds to wait after ``empty_polls`` consecutive empty (or failed) receives: doubling, capped.

    ``poll_delay(0, m) == 0`` (a message just arrived: poll again at once);
    then ``minimum, 2*minimum, 4*minimum, ...`` up to ``maximum``.
    """
    if empty_polls <= 0:
        return 0.0
    minimum = min(minimum, maximum)
    # Cap the exponent: the delay saturates long before 2**64.
    return float(min(maximum, minimum * 2 ** min(empty_polls - 1, 64)))


def renewal_interval(lease_seconds: float) -> float:
    """Renew a message's invisibility at half its lease, so one slow renewal never loses it."""
    return lease_seconds / 2


def decode_body(content: str | bytes, encoding: MessageEncoding) -> bytes:
    """Message text as the bytes the function sees. Raises ValueError for invalid base64."""
    raw = content.encode("utf-8") if isinstance(content, str) else content
    if encoding == "none":
        return raw
    try:
        return base64.b64decode(raw, validate=True)
    except binascii.Error as exc:
        raise ValueError("message is not valid base64 (host.json messageEncoding is 'base64')") from exc


def encode_body(value: Any, encoding: MessageEncoding) -> str:
    """An output-binding value (str, bytes, or JSON-able) as queue message text."""
    if isinstance(value, bytes):
        raw = value
    elif isinstance(value, str):
        raw = value.encode("utf-8")
    else:
        raw = json.dumps(value).encode("utf-8")
    return base64.b64encode(raw).decode("ascii") if encoding == "base64" else raw.decode("utf-8")
