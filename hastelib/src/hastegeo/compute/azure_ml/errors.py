"""The one place that decides what an Azure ML error means, and the one retry loop.

:func:`classify` is pure: it looks at the exception only. Order matters,
because azure-ai-ml's ``MlException`` and azure-core's ``HttpResponseError``
both derive from ``AzureError``:

1. an ``MlException`` caused (``__cause__`` chain) by a connection error is
   transient (a code upload that lost its connection arrives as an
   ``AssetException`` whose cause is a ``ServiceRequestError``);
2. ``HttpResponseError`` by status: 408/429/5xx transient, 404 not found,
   409 conflict, anything else (400, 401, 403, …) terminal;
3. ``ServiceRequestError`` (never sent) and ``ServiceResponseError`` (sent,
   no answer) transient: every call we repeat is idempotent (PUT by name,
   GET, cancel);
4. any other ``MlException`` is client-side validation: terminal, except a
   ``ValidationException`` of type ``RESOURCE_NOT_FOUND`` (what
   ``environments.get(name, label=…)`` raises for a missing asset).

:func:`translate` turns an error into the project's tree with a message that
names the setting to fix; :func:`with_retry` spends one budget on transient
errors, sleeping through the injected sleeper, and then raises
:class:`TransientBackendError` chained to the original.
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from azure.ai.ml.exceptions import MlException, ValidationErrorType, ValidationException  # noqa: TID251
from azure.core.exceptions import (
    ClientAuthenticationError,
    HttpResponseError,
    ServiceRequestError,
    ServiceResponseError,
)

from hastegeo.utils.errors import BackendError, TerminalBackendError, TransientBackendError, describe_exception

log = logging.getLogger(__name__)
T = TypeVar("T")
BACKEND = "azure_ml"

COORDINATES = "AML_SUBSCRIPTION_ID, AML_RESOURCE_GROUP and AML_WORKSPACE"
_CONNECTION = (ServiceRequestError, ServiceResponseError)


class Kind(enum.Enum):
    TRANSIENT = "transient"
    NOT_FOUND = "not_found"
    CONFLICT = "conflict"
    AUTH = "auth"
    TERMINAL = "terminal"


def classify(exc: BaseException) -> Kind:
    """What retrying ``exc`` could achieve. Pure; never raises."""
    if isinstance(exc, MlException) and any(isinstance(cause, _CONNECTION) for cause in _causes(exc)):
        return Kind.TRANSIENT
    if isinstance(exc, ClientAuthenticationError):
        return Kind.AUTH
    if isinstance(exc, HttpResponseError):
        status = exc.status_code
        if status in (408, 429) or (status is not None and status >= 500):
            return Kind.TRANSIENT
        if status == 404:
            return Kind.NOT_FOUND
        if status == 409:
            return Kind.CONFLICT
        if status in (401, 403):
            return Kind.AUTH
        return Kind.TERMINAL
    if isinstance(exc, _CONNECTION):
        return Kind.TRANSIENT
    if isinstance(exc, ValidationException) and exc.error_type is ValidationErrorType.RESOURCE_NOT_FOUND:
        return Kind.NOT_FOUND
    return Kind.TERMINAL


def is_not_found(exc: BaseException) -> bool:
    return classify(exc) is Kind.NOT_FOUND


def translate(exc: BaseException, *, action: str, hint: str) -> BackendError:
    """A project error for ``exc``: transient, or terminal with a message naming the setting to fix.

    ``action`` says what we were doing (``submit job haste-j1``); ``hint`` names
    the settings that decide the outcome of that call.
    """
    kind = classify(exc)
    described = describe_exception(exc)
    if kind is Kind.TRANSIENT:
        return TransientBackendError(f"Azure ML {action}: temporarily unavailable ({described})", backend=BACKEND)
    if kind is Kind.AUTH:
        fix = (
            "the identity could not authenticate or lacks access to the workspace: check AML_IDENTITY_MODE "
            f"(and AML_MANAGED_IDENTITY_CLIENT_ID) and the identity's role on {COORDINATES}"
        )
    elif kind is Kind.NOT_FOUND:
        fix = f"not found: check {hint}"
    else:
        fix = f"rejected: check {hint}"
    return TerminalBackendError(f"Azure ML {action} {fix} ({described})", backend=BACKEND)


def with_retry(
    call: Callable[[], T],
    *,
    action: str,
    hint: str,
    attempts: int,
    delay_s: float,
    sleep: Callable[[float], None],
    passthrough: frozenset[Kind] = frozenset(),
) -> T:
    """Run ``call``; on a transient error try again, at most ``attempts`` calls in all.

    Errors whose kind is in ``passthrough`` are re-raised unchanged for the
    caller to handle (e.g. ``NOT_FOUND`` on a get that precedes a create).

    Raises:
        TransientBackendError: the budget ran out (chained to the last error).
        TerminalBackendError: retrying cannot help (chained to the error).
    """
    for attempt in range(1, attempts + 1):
        try:
            return call()
        except Exception as exc:
            kind = classify(exc)
            if kind in passthrough:
                raise
            if kind is not Kind.TRANSIENT or attempt == attempts:
                raise translate(exc, action=action, hint=hint) from exc
            wait = delay_s * 2 ** (attempt - 1)
            log.warning(
                "Azure ML %s: transient error (attempt %d/%d), retrying in %.1fs: %s",
                action,
                attempt,
                attempts,
                wait,
                describe_exception(exc),
            )
            sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover


@dataclass(frozen=True)
class Retry:
    """One retry budget (``AML_RETRY_ATTEMPTS``, ``AML_RETRY_DELAY_S``) and the injected sleeper."""

    attempts: int = 3
    delay_s: float = 1.0
    sleep: Callable[[float], None] = field(default=time.sleep)

    def run(self, call: Callable[[], T], *, action: str, hint: str, passthrough: frozenset[Kind] = frozenset()) -> T:
        """:func:`with_retry` with this budget."""
        return with_retry(
            call,
            action=action,
            hint=hint,
            attempts=self.attempts,
            delay_s=self.delay_s,
            sleep=self.sleep,
            passthrough=passthrough,
        )


def _causes(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current = exc.__cause__ or exc.__context__
    while current is not None and current not in chain and len(chain) < 10:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain
