"""What a provider error means, and the one retried, translated call every adapter makes. Pure: no network.

Errors are classified by the service's error *code* first (``exc.error.code``,
or the JSON body of a streamed download whose ``exc.error`` is ``None``) — each
adapter hands in its own :class:`Classifier` table — and by HTTP status second,
never by exception class alone: azure-batch raises ``ResourceExistsError`` for
every 409, ``NodeNotReady`` included. A transport failure (never sent, or sent
and unanswered) is transient wherever it hides in the cause chain: every call
we repeat is idempotent (PUT by name, GET, cancel).

:class:`RetryPolicy` is the only retry owner of a backend: SDK clients are
built with ``retry_total=0`` and the queue redelivers whole steps. One budget
per call (attempts, doubling waits up to a cap, ``Retry-After`` honoured), one
injected sleeper (tests never sleep), and when the budget is spent the
*original* exception is re-raised, not tenacity's wrapper, so it can still be
classified and described before it is translated into the project's own tree.

:class:`ProviderCalls` is where that happens, and the one way an adapter calls
its provider: the policy's loop, then a failure translated with the provider's
table (:meth:`Classifier.translate`, chained to the original) or handed back
as data (:class:`Failed`) where the adapter decides something from it (a node
that is gone, a job that exists already, a best-effort delete). Adapters
therefore hold no ``except AzureError`` of their own (ADR 0028).
"""

from __future__ import annotations

import enum
import json
import logging
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from azure.core.exceptions import (
    AzureError,
    ClientAuthenticationError,
    HttpResponseError,
    ServiceRequestError,
    ServiceResponseError,
)
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from hastegeo.utils.errors import (
    BackendError,
    TerminalBackendError,
    TransientBackendError,
    describe_error,
    describe_exception,
)

log = logging.getLogger(__name__)
T = TypeVar("T")


class ErrorKind(enum.Enum):
    TRANSIENT = "transient"  # service busy, throttled, 5xx, transport failure: retry
    NODE_TRANSITION = "node_transition"  # a compute node is mid-transition and may still answer: retry briefly
    NODE_GONE = "node_gone"  # the node's copy of the files is gone for good
    NOT_FOUND = "not_found"  # the thing asked for does not exist
    EXISTS = "exists"  # it exists already (409): compare the fingerprint, or bind
    FINISHED = "finished"  # the job or task already completed or is terminating
    AUTH = "auth"  # the identity could not authenticate or lacks access
    TERMINAL = "terminal"  # retrying will not help


RETRYABLE = frozenset({ErrorKind.TRANSIENT, ErrorKind.NODE_TRANSITION})
# Transport failures have no service code; they are named by these pseudo-codes.
REQUEST_NOT_SENT = "ServiceRequestError"
RESPONSE_LOST = "ServiceResponseError"
_TRANSPORT = {ServiceRequestError: REQUEST_NOT_SENT, ServiceResponseError: RESPONSE_LOST}
_TRANSIENT_STATUS = frozenset({408, 429, 500, 502, 503, 504})
_BY_STATUS = {404: ErrorKind.NOT_FOUND, 409: ErrorKind.EXISTS, 401: ErrorKind.AUTH, 403: ErrorKind.AUTH}


@dataclass(frozen=True)
class ErrorFacts:
    code: str | None
    status: int | None
    retry_after_s: float | None = None
    body_message: str | None = None  # from the body of a streamed response, whose ``exc.error`` is None


def error_facts(exc: BaseException) -> ErrorFacts:
    """Code, HTTP status and ``Retry-After`` of an Azure SDK exception (anything else: no code)."""
    for cause in _chain(exc):
        for cls, pseudo in _TRANSPORT.items():
            if isinstance(cause, cls):
                return ErrorFacts(pseudo, None)
    if not isinstance(exc, HttpResponseError):
        return ErrorFacts(None, None)
    response = exc.response
    code = getattr(exc.error, "code", None) if exc.error is not None else None
    message = None
    if not code and response is not None:
        code, message = _code_from_body(response)
    return ErrorFacts(code or None, exc.status_code, _retry_after(response), message)


def describe_provider_error(exc: BaseException) -> str:
    """``Code: message`` without the RequestId trailer, also for streamed errors (their code is in the body)."""
    facts = error_facts(exc)
    if facts.code and facts.body_message and getattr(exc, "error", None) is None:
        return describe_error(facts.code, facts.body_message)
    text = describe_exception(exc)
    return text if not facts.code or text.startswith(facts.code) else f"{facts.code}: {text}"


# How a provider words a failure: (kind, what we were doing, the readable error, the settings to check) -> message.
Wording = Callable[[ErrorKind, str, str, str], str]


def plain_wording(kind: ErrorKind, what: str, reason: str, hint: str) -> str:
    """``<what>: <Code: message>``, the default; a terminal one adds ``(check <hint>)`` when there is a hint."""
    return f"{what}: {reason}" + (f" (check {hint})" if hint and kind not in RETRYABLE else "")


@dataclass(frozen=True)
class Classifier:
    """One provider's reading of its errors, and the words its translated errors carry.

    ``codes`` and ``prefixes`` map service codes to kinds. With
    ``codes_decide`` a coded error the table does not know is terminal unless
    its status is transient (Batch: its codes are the contract); otherwise the
    status decides (404 not found, 409 exists, 401/403 auth). ``special`` sees
    exceptions that carry no code at all (a client-side SDK validation error).
    ``backend`` names the backend its project errors carry, ``wording`` phrases them.
    """

    codes: Mapping[str, ErrorKind] = field(default_factory=dict)
    prefixes: Mapping[str, ErrorKind] = field(default_factory=dict)
    codes_decide: bool = False
    special: Callable[[BaseException], ErrorKind | None] | None = None
    backend: str | None = None
    wording: Wording = plain_wording

    def translate(self, exc: BaseException, what: str, hint: str = "") -> BackendError:
        """The project's error for ``exc`` (not yet chained: raise it ``from exc``)."""
        kind = self.kind(exc)
        return backend_error(kind, self.wording(kind, what, describe_provider_error(exc), hint), backend=self.backend)

    def kind(self, exc: BaseException) -> ErrorKind:
        """What retrying ``exc`` could achieve. Never raises."""
        facts = error_facts(exc)
        if facts.code is None and self.special is not None:
            found = self.special(exc)
            if found is not None:
                return found
        if isinstance(exc, ClientAuthenticationError) and facts.code is None:
            return ErrorKind.AUTH
        return self.kind_of(facts.code, facts.status)

    def kind_of(self, code: str | None, status: int | None) -> ErrorKind:
        """The meaning of an error from its code first and its HTTP status second."""
        if code in (REQUEST_NOT_SENT, RESPONSE_LOST):
            return ErrorKind.TRANSIENT
        if code:
            if code in self.codes:
                return self.codes[code]
            for prefix, kind in self.prefixes.items():
                if code.startswith(prefix):
                    return kind
        if status in _TRANSIENT_STATUS or (status is not None and status >= 500):
            return ErrorKind.TRANSIENT
        if code and self.codes_decide:
            return ErrorKind.TERMINAL
        return _BY_STATUS.get(status or 0, ErrorKind.TERMINAL)


@dataclass(frozen=True)
class RetryBudget:
    """One budget per call: ``attempts`` in total, waits doubling from ``backoff_s`` up to ``max_wait_s``."""

    attempts: int = 4
    backoff_s: float = 1.0
    max_wait_s: float = 20.0

    def wait_for(self, attempt: int, exc: BaseException | None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based); honours ``Retry-After``."""
        hinted = error_facts(exc).retry_after_s if exc is not None else None
        wait = hinted if hinted is not None else self.backoff_s * (2 ** (attempt - 1))
        return min(wait, self.max_wait_s)


@dataclass(frozen=True)
class RetryPolicy:
    """A budget, a provider's classifier and the injected sleeper: everything a retried call needs."""

    budget: RetryBudget
    classifier: Classifier
    sleep: Callable[[float], None]

    def kind(self, exc: BaseException) -> ErrorKind:
        return self.classifier.kind(exc)

    def call(
        self,
        fn: Callable[[], T],
        *,
        what: str = "provider call",
        retry_on: Collection[ErrorKind] = RETRYABLE,
        on_retry: Callable[[BaseException], None] | None = None,
    ) -> T:
        """Run ``fn``; retry errors of the kinds in ``retry_on`` within the budget; re-raise the original when spent.

        ``on_retry`` sees each exception that is about to be retried (e.g. to keep the first cause).
        """

        def wait(state: RetryCallState) -> float:
            return self.budget.wait_for(state.attempt_number, _outcome(state))

        def before_sleep(state: RetryCallState) -> None:
            exc = _outcome(state)
            facts = error_facts(exc) if exc is not None else ErrorFacts(None, None)
            log.info(
                "%s failed (%s, HTTP %s), attempt %d; retrying", what, facts.code, facts.status, state.attempt_number
            )
            if on_retry is not None and exc is not None:
                on_retry(exc)

        retrying = Retrying(
            stop=stop_after_attempt(self.budget.attempts),
            wait=wait,
            retry=retry_if_exception(lambda exc: self.kind(exc) in retry_on),
            reraise=True,
            sleep=self.sleep,
            before_sleep=before_sleep,
        )
        return retrying(fn)

    def call_unless(
        self,
        answers: Collection[ErrorKind],
        fn: Callable[[], T],
        *,
        what: str = "provider call",
        retry_on: Collection[ErrorKind] = RETRYABLE,
    ) -> T | None:
        """:meth:`call`, or None when ``fn`` fails with an error of a kind in ``answers``.

        For a GET before a create, a create that raced another, or a cancel of
        what already ended, "not found", "exists" or "finished" is the answer,
        not a failure; every other error is re-raised as :meth:`call` does.
        Where ``fn`` itself may return None, call it for its effect only.
        """
        try:
            return self.call(fn, what=what, retry_on=retry_on)
        except Exception as exc:
            if self.kind(exc) in answers:
                return None
            raise


@dataclass(frozen=True)
class Failed:
    """A provider call that failed for good, as data: what it means, in words, and the project's error for it."""

    kind: ErrorKind
    code: str | None
    reason: str  # ``Code: message``, readable
    error: BackendError  # translated; its ``__cause__`` is the provider's exception
    retried: tuple[str, ...] = ()  # the readable reasons of the attempts retried before it, oldest first

    @property
    def cause(self) -> BaseException | None:
        """The provider's own exception, to chain a project error of the adapter's making to."""
        return self.error.__cause__


@dataclass(frozen=True)
class ProviderCalls:
    """The one way an adapter calls its provider: retried by ``policy``, failures in the project's tree.

    ``what`` says what we were doing (it starts the message and names the call
    in the retry log); ``hint`` names the settings that decide the outcome.
    """

    policy: RetryPolicy

    def call(self, fn: Callable[[], T], *, what: str, hint: str = "", retry_on: Collection[ErrorKind] = RETRYABLE) -> T:
        """``fn()``, retried within the budget.

        Raises:
            TransientBackendError: the provider stayed busy or unreachable for the whole budget.
            TerminalBackendError: retrying cannot help. Both are chained to the provider's exception.
        """
        try:
            return self.policy.call(fn, what=what, retry_on=retry_on)
        except AzureError as exc:
            raise self.policy.classifier.translate(exc, what, hint) from exc

    def call_unless(
        self,
        answers: Collection[ErrorKind],
        fn: Callable[[], T],
        *,
        what: str,
        hint: str = "",
        retry_on: Collection[ErrorKind] = RETRYABLE,
    ) -> T | None:
        """:meth:`call`, or None when ``fn`` fails with an error of a kind in ``answers`` (see
        :meth:`RetryPolicy.call_unless`: "not found" on a GET, "finished" on a cancel)."""
        try:
            return self.policy.call_unless(answers, fn, what=what, retry_on=retry_on)
        except AzureError as exc:
            raise self.policy.classifier.translate(exc, what, hint) from exc

    def attempt(
        self, fn: Callable[[], T], *, what: str, hint: str = "", retry_on: Collection[ErrorKind] = RETRYABLE
    ) -> T | Failed:
        """``fn()``'s value, or how it failed once the budget was spent, as :class:`Failed`.

        Never raises for a provider error (any ``AzureError``, the cause-chained client-side ones
        included); anything else is a bug in ``fn`` and propagates unchanged.
        """
        retried: list[BaseException] = []
        try:
            return self.policy.call(fn, what=what, retry_on=retry_on, on_retry=retried.append)
        except AzureError as exc:
            error = self.policy.classifier.translate(exc, what, hint)
            error.__cause__ = exc
            return Failed(
                kind=self.policy.kind(exc),
                code=error_facts(exc).code,
                reason=describe_provider_error(exc),
                error=error,
                retried=tuple(describe_provider_error(earlier) for earlier in retried),
            )


def backend_error(kind: ErrorKind, message: str, *, backend: str | None) -> BackendError:
    """The project's error for a provider error of ``kind``: transient when a later step could succeed."""
    cls = TransientBackendError if kind in RETRYABLE else TerminalBackendError
    return cls(message, backend=backend)


def _outcome(state: RetryCallState) -> BaseException | None:
    return state.outcome.exception() if state.outcome is not None else None


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and its causes (an upload that lost its connection arrives wrapped by the SDK)."""
    chain = [exc]
    current = exc.__cause__ or exc.__context__
    while current is not None and current not in chain and len(chain) < 10:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


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
