"""What an Azure ML error means, and the project error it becomes; retries are :mod:`hastegeo.compute.retry`'s.

Azure ML errors are read by HTTP status (408/429/5xx transient, 404 not
found, 409 exists, 401/403 auth, anything else terminal) and by the cause
chain: a code upload that lost its connection arrives as an ``AssetException``
caused by a ``ServiceRequestError``, which is transient. A client-side
``ValidationException`` of type ``RESOURCE_NOT_FOUND`` (what
``environments.get(name, label=…)`` raises for a missing asset) is not found;
any other client-side error is terminal.

:func:`translate` turns an error into the project's tree with a message that
names the setting to fix; :class:`Retry` runs a call under the one retry
policy and translates what it re-raises, chained to the original.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from azure.ai.ml.exceptions import ValidationErrorType, ValidationException

from hastegeo.compute.retry import Classifier, ErrorKind, RetryBudget, RetryPolicy, backend_error
from hastegeo.utils.errors import BackendError, describe_exception

T = TypeVar("T")
BACKEND = "azure_ml"
COORDINATES = "AML_SUBSCRIPTION_ID, AML_RESOURCE_GROUP and AML_WORKSPACE"
MAX_WAIT_S = 60.0  # a Retry-After longer than this is not waited for within one call


def _client_side(exc: BaseException) -> ErrorKind | None:
    if isinstance(exc, ValidationException) and exc.error_type is ValidationErrorType.RESOURCE_NOT_FOUND:
        return ErrorKind.NOT_FOUND
    return None


AML_ERRORS = Classifier(special=_client_side)


def classify(exc: BaseException) -> ErrorKind:
    """What retrying ``exc`` could achieve. Pure; never raises."""
    return AML_ERRORS.kind(exc)


def is_not_found(exc: BaseException) -> bool:
    return classify(exc) is ErrorKind.NOT_FOUND


def translate(exc: BaseException, *, action: str, hint: str) -> BackendError:
    """A project error for ``exc``: transient, or terminal with a message naming the setting to fix.

    ``action`` says what we were doing (``submit job haste-j1``); ``hint`` names
    the settings that decide the outcome of that call.
    """
    kind = classify(exc)
    if kind is ErrorKind.TRANSIENT:
        outcome = ": temporarily unavailable"
    elif kind is ErrorKind.AUTH:
        outcome = (
            " the identity could not authenticate or lacks access to the workspace: check AML_IDENTITY_MODE "
            f"(and AML_MANAGED_IDENTITY_CLIENT_ID) and the identity's role on {COORDINATES}"
        )
    else:
        outcome = f" {'not found' if kind is ErrorKind.NOT_FOUND else 'rejected'}: check {hint}"
    return backend_error(kind, f"Azure ML {action}{outcome} ({describe_exception(exc)})", backend=BACKEND)


@dataclass(frozen=True)
class Retry:
    """One retry budget (``AML_RETRY_ATTEMPTS``, ``AML_RETRY_DELAY_S``) and the injected sleeper.

    Both methods raise TransientBackendError when the budget ran out and
    TerminalBackendError when retrying cannot help, chained to the error.
    """

    attempts: int = 3
    delay_s: float = 1.0
    sleep: Callable[[float], None] = field(default=time.sleep)

    @property
    def policy(self) -> RetryPolicy:
        return RetryPolicy(RetryBudget(self.attempts, self.delay_s, MAX_WAIT_S), AML_ERRORS, self.sleep)

    def run(
        self, call: Callable[[], T], *, action: str, hint: str, passthrough: frozenset[ErrorKind] = frozenset()
    ) -> T:
        """Run ``call`` under the one retry policy (transient errors retried, ``Retry-After`` honoured).

        Errors whose kind is in ``passthrough`` are re-raised unchanged for the caller to handle.
        """
        try:
            return self.policy.call(call, what=f"Azure ML {action}")
        except Exception as exc:
            if classify(exc) in passthrough:
                raise
            raise translate(exc, action=action, hint=hint) from exc

    def run_unless(self, answer: ErrorKind, call: Callable[[], T], *, action: str, hint: str) -> T | None:
        """:meth:`run`, or None when ``call`` fails with an error of kind ``answer`` (NOT_FOUND on a get)."""
        try:
            return self.policy.call_unless({answer}, call, what=f"Azure ML {action}")
        except Exception as exc:
            raise translate(exc, action=action, hint=hint) from exc
