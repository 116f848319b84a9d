"""What a Batch error means, and the one retry loop that acts on it. Pure: no network.

Errors are classified by the service's error *code* (``exc.error.code``, or
the JSON body of a streamed download whose ``exc.error`` is ``None``), then
by HTTP status — never by exception class, because azure-batch raises
``ResourceExistsError`` for every 409, ``NodeNotReady`` included.

The adapter is the only retry owner: the SDK client is built with
``retry_total=0`` and every call goes through :func:`call_with_retry`, whose
sleeper is injected (tests never sleep). When the budget is spent the
*original* Azure exception is re-raised (``reraise=True``), so the edge can
still classify and describe it.
"""

from __future__ import annotations

import enum
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from azure.core.exceptions import HttpResponseError, ServiceRequestError, ServiceResponseError
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

log = logging.getLogger(__name__)
T = TypeVar("T")


class ErrorKind(enum.Enum):
    TRANSIENT = "transient"  # service busy, throttled, 5xx, transport failure: retry
    NODE_TRANSITION = "node_transition"  # the node is mid-transition and may still answer: retry briefly
    NODE_GONE = "node_gone"  # the node's copy of the task files is gone for good
    NOT_FOUND = "not_found"  # job, task or file does not exist
    EXISTS = "exists"  # JobExists / TaskExists: compare the fingerprint
    FINISHED = "finished"  # the job or task already completed or is terminating
    TERMINAL = "terminal"  # retrying will not help


RETRYABLE = frozenset({ErrorKind.TRANSIENT, ErrorKind.NODE_TRANSITION})

# Transport failures have no service code; they are named by these pseudo-codes.
REQUEST_NOT_SENT = "ServiceRequestError"
RESPONSE_LOST = "ServiceResponseError"

_CODES: dict[str, ErrorKind] = {
    **dict.fromkeys(
        ("ServerBusy", "OperationTimedOut", "InternalError", "TooManyRequests", REQUEST_NOT_SENT, RESPONSE_LOST),
        ErrorKind.TRANSIENT,
    ),
    # A node in transition may still answer: retried within the budget, then the node copy is unavailable.
    **dict.fromkeys(
        (
            "NodeNotReady",
            "NodeStateInvalid",
            "NodeBeingCreated",
            "NodeBeingStarted",
            "NodeBeingRebooted",
            "NodeBeingReimaged",
        ),
        ErrorKind.NODE_TRANSITION,
    ),
    **dict.fromkeys(
        ("NodeNotFound", "NodeStateUnusable", "TaskFilesUnavailable", "TaskFilesCleanedup"), ErrorKind.NODE_GONE
    ),
    **dict.fromkeys(("JobNotFound", "TaskNotFound", "FileNotFound"), ErrorKind.NOT_FOUND),
    **dict.fromkeys(("JobExists", "TaskExists"), ErrorKind.EXISTS),
    **dict.fromkeys(
        ("JobCompleted", "JobNotActive", "JobBeingTerminated", "JobBeingDeleted", "TaskCompleted"),
        ErrorKind.FINISHED,
    ),
}
_TRANSIENT_STATUS = frozenset({408, 429, 500, 502, 503, 504})


def classify(code: str | None, status: int | None) -> ErrorKind:
    """The meaning of a Batch error, from its code first and its HTTP status second."""
    if code:
        if code in _CODES:
            return _CODES[code]
        if code.startswith("NodeBeing"):  # future mid-transition states
            return ErrorKind.NODE_TRANSITION
    if status in _TRANSIENT_STATUS:
        return ErrorKind.TRANSIENT
    if status == 404 and not code:
        return ErrorKind.NOT_FOUND
    return ErrorKind.TERMINAL


@dataclass(frozen=True)
class ErrorFacts:
    code: str | None
    status: int | None
    retry_after_s: float | None = None
    body_message: str | None = None  # from the body of a streamed response, whose ``exc.error`` is None

    @property
    def kind(self) -> ErrorKind:
        return classify(self.code, self.status)


def error_facts(exc: BaseException) -> ErrorFacts:
    """Code, HTTP status and ``Retry-After`` of an Azure SDK exception (anything else: no code, terminal)."""
    if isinstance(exc, ServiceRequestError):
        return ErrorFacts(REQUEST_NOT_SENT, None)
    if isinstance(exc, ServiceResponseError):
        return ErrorFacts(RESPONSE_LOST, None)
    if not isinstance(exc, HttpResponseError):
        return ErrorFacts(None, None)
    response = exc.response
    code = getattr(exc.error, "code", None) if exc.error is not None else None
    message = None
    if not code and response is not None:
        code, message = _code_from_body(response)
    return ErrorFacts(code or None, exc.status_code, _retry_after(response), message)


def _code_from_body(response: Any) -> tuple[str | None, str | None]:
    """A streamed download raises before its body is read, so ``exc.error`` is None: read it here."""
    try:
        response.read()
        body = json.loads(response.text() or "null")
    except Exception:  # no body (HEAD), not JSON, or already closed: no code
        return None, None
    if not isinstance(body, dict):
        return None, None
    code = body.get("code")
    message = body.get("message")
    if isinstance(message, dict):
        message = message.get("value")
    return (str(code) if code else None), (str(message) if message else None)


def _retry_after(response: Any) -> float | None:
    if response is None:
        return None
    headers = getattr(response, "headers", None) or {}
    for name in ("retry-after-ms", "x-ms-retry-after-ms"):
        value = headers.get(name)
        if value and value.strip().isdigit():
            return int(value) / 1000.0
    value = headers.get("retry-after") or headers.get("Retry-After")
    if value:
        try:
            return max(0.0, float(value))
        except ValueError:
            return None  # an HTTP date: fall back to our own backoff
    return None


def is_retryable(exc: BaseException) -> bool:
    return error_facts(exc).kind in RETRYABLE


@dataclass(frozen=True)
class RetryBudget:
    """One budget per Batch call: ``attempts`` in total, waits doubling from ``backoff_s`` up to ``max_wait_s``."""

    attempts: int = 4
    backoff_s: float = 1.0
    max_wait_s: float = 20.0

    def wait_for(self, attempt: int, exc: BaseException | None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based); honours ``Retry-After``."""
        hinted = error_facts(exc).retry_after_s if exc is not None else None
        wait = hinted if hinted is not None else self.backoff_s * (2 ** (attempt - 1))
        return min(wait, self.max_wait_s)


def call_with_retry(
    fn: Callable[[], T],
    budget: RetryBudget,
    sleep: Callable[[float], None],
    *,
    retryable: Callable[[BaseException], bool] = is_retryable,
    what: str = "Batch call",
    on_retry: Callable[[BaseException], None] | None = None,
) -> T:
    """Run ``fn``; retry what ``retryable`` accepts within ``budget``; re-raise the original when spent.

    ``on_retry`` sees each exception that is about to be retried (e.g. to keep the first cause).
    """

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        return budget.wait_for(state.attempt_number, exc)

    def before_sleep(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        facts = error_facts(exc) if exc is not None else ErrorFacts(None, None)
        log.info("%s failed (%s, HTTP %s), attempt %d; retrying", what, facts.code, facts.status, state.attempt_number)
        if on_retry is not None and exc is not None:
            on_retry(exc)

    retrying = Retrying(
        stop=stop_after_attempt(budget.attempts),
        wait=wait,
        retry=retry_if_exception(retryable),
        reraise=True,
        sleep=sleep,
        before_sleep=before_sleep,
    )
    return retrying(fn)
