"""Drive one queue-triggered function from an Azure Storage queue, as the Functions host does.

One poller thread per trigger fetches up to ``batchSize`` messages whenever
in-flight work has dropped to ``newBatchThreshold``, and runs each message
on its own worker thread. Messages are received with a lease (visibility)
that a renewer thread extends while the function runs, so a slow function
never has its message delivered twice. On success the message is deleted;
on failure it is released with host.json's ``visibilityTimeout`` delay, and
after ``maxDequeueCount`` attempts it is copied, text unchanged, to
``<queue>-poison`` and deleted. An empty queue is polled with doubling
delays up to ``maxPollingInterval``; a storage outage is retried with a
capped back-off and logged once, never crashing the poller.

On ``stop`` the poller stops fetching, running functions get a grace period
to finish, and whatever is still running then has its message released
(visible again at once) so another host can take it: delivery stays
at-least-once, as in Azure.
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from azure.core.exceptions import ResourceNotFoundError
from azure.functions.queue import QueueMessage as TriggerMessage
from azure.storage.queue import QueueClient
from azure.storage.queue import QueueMessage as StorageMessage

from hastegeo_dev.devhost.functions import OutValue, QueueFunction, invoke
from hastegeo_dev.devhost.hostjson import QueueSettings
from hastegeo_dev.devhost.outputs import OutputSender
from hastegeo_dev.devhost.queue_policy import (
    OnFailure,
    OnReceive,
    decode_body,
    fetch_size,
    on_failure,
    on_receive,
    poison_queue_name,
    poll_delay,
    renewal_interval,
)
from hastegeo_dev.devhost.storage import QueueClients

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DriverOptions:
    """Host behaviour that host.json does not set.

    ``lease_seconds``: invisibility taken on receive and renewed at half-time
    (the Functions host uses 10 minutes; shorter only speeds up recovery after
    a crash). ``outage_backoff_max``: cap of the retry delay while storage is
    unreachable. ``stop_grace``: how long ``stop`` lets running functions finish.
    ``rest_polling_interval``: how long an empty queue's back-off may grow when that
    is longer than host.json's ``maxPollingInterval`` (0: it is not). A split host's
    standby workers use it (see ``workers``): a queue at rest needs one listener.
    """

    lease_seconds: int = 30
    outage_backoff_max: float = 5.0
    stop_grace: float = 2.0
    rest_polling_interval: float = 0.0

    def __post_init__(self) -> None:
        if self.lease_seconds < 1:
            raise ValueError("lease_seconds must be at least 1")


class _Outcome(Enum):
    SUCCESS = "success"
    FAILURE = "failure"
    POISON = "poison"


@dataclass
class _Lease:
    message_id: str
    pop_receipt: str
    renew_at: float
    lock: threading.Lock = field(default_factory=threading.Lock)
    done: bool = False  # being settled: no more renewals
    released: bool = False  # given back by stop(): the worker must not settle it


class QueueDriver:
    """Polls ``function.queue_name`` and runs ``function`` per message (see the module docstring)."""

    def __init__(
        self,
        function: QueueFunction,
        settings: QueueSettings,
        connection_string: str,
        clients: QueueClients,
        outputs: OutputSender,
        options: DriverOptions | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.function = function
        self._settings = settings
        self._connection = connection_string
        self._clients = clients
        self._outputs = outputs
        self._options = options or DriverOptions()
        self._clock = clock
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._leases: dict[str, _Lease] = {}
        self._in_flight = 0
        self._signal = threading.Event()
        self._wake_requested = False
        self._stopping = threading.Event()
        self._renewer_stop = threading.Event()
        self._queues_ready = False
        self._empty_polls = 0
        self._failures = 0
        self._healthy = True
        self._poller = threading.Thread(target=self._run_poller, daemon=True, name=f"devhost-poll-{self.queue_name}")
        self._renewer = threading.Thread(target=self._run_renewer, daemon=True, name=f"devhost-renew-{self.queue_name}")

    @property
    def queue_name(self) -> str:
        return self.function.queue_name

    @property
    def in_flight(self) -> int:
        with self._lock:
            return self._in_flight

    def start(self) -> None:
        """Create the queue and its poison queue now if storage answers (so callers can send at once),
        then start polling. An unreachable storage is left to the poller, which retries."""
        with contextlib.suppress(Exception):
            self._ensure_queues()
        self._poller.start()
        self._renewer.start()

    def wake(self) -> None:
        """Poll now instead of at the end of the current back-off (e.g. right after sending a message)."""
        self._wake_requested = True
        self._signal.set()

    def begin_stop(self) -> None:
        """Stop fetching; running functions continue."""
        self._stopping.set()
        self._signal.set()

    def finish_stop(self, deadline: float) -> None:
        """Wait for running functions until ``deadline`` (monotonic), then release what is still running."""
        self.begin_stop()
        if self._poller.is_alive():
            self._poller.join(timeout=max(0.05, deadline - self._clock()))
        with self._idle:
            while self._in_flight and self._clock() < deadline:
                self._idle.wait(timeout=max(0.0, deadline - self._clock()))
            leases = list(self._leases.values())
        for lease in leases:
            self._release(lease)
        self._renewer_stop.set()
        if self._renewer.is_alive():
            self._renewer.join(timeout=max(0.05, deadline - self._clock()))

    # -- polling ---------------------------------------------------------------------------------

    @property
    def _client(self) -> QueueClient:
        return self._clients.get(self._connection, self.queue_name)

    def _run_poller(self) -> None:
        while not self._stopping.is_set():
            try:
                delay = self._poll_once()
            except ResourceNotFoundError as exc:
                self._queues_ready = False  # deleted under us (or a fresh Azurite): create again
                delay = self._on_error(exc)
            except Exception as exc:  # the poller must never die; every error is retried
                delay = self._on_error(exc)
            self._sleep(delay)

    def _poll_once(self) -> float:
        if not self._queues_ready:
            self._ensure_queues()
        wanted = fetch_size(self.in_flight, self._settings.batch_size, self._settings.new_batch_threshold)
        if wanted == 0:
            return 1.0  # a finishing worker sets the signal
        pages = self._client.receive_messages(
            messages_per_page=wanted, max_messages=wanted, visibility_timeout=self._options.lease_seconds
        )
        messages = list(pages)
        self._on_success()
        if not messages:
            self._empty_polls += 1
            longest = max(self._settings.max_polling_interval.total_seconds(), self._options.rest_polling_interval)
            return poll_delay(self._empty_polls, longest)
        self._empty_polls = 0
        for message in messages:
            self._dispatch(message)
        return 0.0

    def _ensure_queues(self) -> None:
        for name in (self.queue_name, poison_queue_name(self.queue_name)):
            self._clients.forget_created(self._connection, name)
            self._clients.ensure(self._connection, name)
        self._queues_ready = True

    def _sleep(self, delay: float) -> None:
        if delay > 0 and not self._stopping.is_set():
            self._signal.wait(delay)
        self._signal.clear()
        if self._wake_requested:
            self._wake_requested = False
            self._empty_polls = 0

    def _on_error(self, exc: Exception) -> float:
        self._failures += 1
        if self._healthy:
            self._healthy = False
            detail = str(exc).splitlines()[0][:200] if str(exc) else ""
            log.warning(
                "queue %s: storage unavailable (%s: %s); retrying with back-off up to %.1fs",
                self.queue_name,
                type(exc).__name__,
                detail,
                self._options.outage_backoff_max,
            )
        return poll_delay(self._failures, self._options.outage_backoff_max)

    def _on_success(self) -> None:
        if not self._healthy:
            log.info("queue %s: storage reachable again after %d failed attempts", self.queue_name, self._failures)
            self._healthy = True
        self._failures = 0

    # -- processing ------------------------------------------------------------------------------

    def _dispatch(self, message: StorageMessage) -> None:
        lease = _Lease(
            message.id, message.pop_receipt or "", self._clock() + renewal_interval(self._options.lease_seconds)
        )
        if self._stopping.is_set():
            self._release(lease)
            return
        with self._lock:
            self._leases[message.id] = lease
            self._in_flight += 1
        name = f"devhost-{self.queue_name}-{message.id[:8]}"
        threading.Thread(target=self._process, args=(message, lease), daemon=True, name=name).start()

    def _process(self, message: StorageMessage, lease: _Lease) -> None:
        try:
            self._settle(message, lease, self._run(message))
        except Exception:
            log.exception("queue %s: unexpected error settling message %s", self.queue_name, message.id)
        finally:
            with self._idle:
                self._leases.pop(message.id, None)
                self._in_flight -= 1
                self._idle.notify_all()
            self._signal.set()

    def _run(self, message: StorageMessage) -> _Outcome:
        count, limit = message.dequeue_count or 1, self._settings.max_dequeue_count
        if on_receive(count, limit) is OnReceive.POISON:
            return _Outcome.POISON
        try:
            body = decode_body(message.content or "", self._settings.message_encoding)
            trigger = TriggerMessage(  # type: ignore[no-untyped-call]
                id=message.id,
                body=body,
                dequeue_count=count,
                expiration_time=message.expires_on,
                insertion_time=message.inserted_on,
                time_next_visible=message.next_visible_on,
                pop_receipt=message.pop_receipt,
            )
            outs = {output.arg_name: OutValue() for output in self.function.outputs}
            invoke(self.function.handler, self.function.name, self.function.arg_name, trigger, outs)
            self._outputs.send(self.function.outputs, outs)
        except Exception:
            log.exception(
                "function %s failed on message %s (dequeue count %d of %d)",
                self.function.name,
                message.id,
                count,
                limit,
            )
            return _Outcome.POISON if on_failure(count, limit) is OnFailure.POISON else _Outcome.FAILURE
        return _Outcome.SUCCESS

    def _settle(self, message: StorageMessage, lease: _Lease, outcome: _Outcome) -> None:
        with lease.lock:
            lease.done = True
            if lease.released:
                return
            try:
                if outcome is _Outcome.SUCCESS:
                    self._client.delete_message(lease.message_id, lease.pop_receipt)
                elif outcome is _Outcome.FAILURE:
                    delay = math.ceil(self._settings.visibility_timeout.total_seconds())
                    self._client.update_message(lease.message_id, lease.pop_receipt, visibility_timeout=delay)
                else:
                    poison = poison_queue_name(self.queue_name)
                    self._clients.ensure(self._connection, poison).send_message(message.content or "")
                    self._client.delete_message(lease.message_id, lease.pop_receipt)
                    log.warning(
                        "queue %s: message %s moved to %s after %d dequeues",
                        self.queue_name,
                        message.id,
                        poison,
                        message.dequeue_count or 1,
                    )
            except Exception as exc:
                log.warning(
                    "queue %s: could not %s message %s (%s); it reappears when its lease expires",
                    self.queue_name,
                    "delete" if outcome is _Outcome.SUCCESS else "release",
                    message.id,
                    type(exc).__name__,
                )

    # -- leases ----------------------------------------------------------------------------------

    def _run_renewer(self) -> None:
        interval = renewal_interval(self._options.lease_seconds)
        tick = min(interval / 4, 1.0)
        while not self._renewer_stop.wait(tick):
            now = self._clock()
            with self._lock:
                due = [lease for lease in self._leases.values() if lease.renew_at <= now]
            for lease in due:
                self._renew(lease, interval, tick)

    def _renew(self, lease: _Lease, interval: float, tick: float) -> None:
        with lease.lock:
            if lease.done or lease.released:
                return
            try:
                receipt = self._client.update_message(
                    lease.message_id, lease.pop_receipt, visibility_timeout=self._options.lease_seconds
                )
            except Exception as exc:
                log.warning("queue %s: lease renewal failed for %s (%s)", self.queue_name, lease.message_id, exc)
                lease.renew_at = self._clock() + tick
                return
            lease.pop_receipt = receipt.pop_receipt or lease.pop_receipt
            lease.renew_at = self._clock() + interval

    def _release(self, lease: _Lease) -> None:
        with lease.lock:
            if lease.done or lease.released:
                return
            lease.released = True
            try:
                self._client.update_message(lease.message_id, lease.pop_receipt, visibility_timeout=0)
            except Exception as exc:
                log.warning(
                    "queue %s: could not release message %s on stop (%s); it reappears when its lease expires",
                    self.queue_name,
                    lease.message_id,
                    type(exc).__name__,
                )
