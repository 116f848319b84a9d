"""What an Azure ML error means, and how its project error reads; the call is :mod:`hastegeo.compute.retry`'s.

Azure ML errors are read by HTTP status (408/429/5xx transient, 404 not
found, 409 exists, 401/403 auth, anything else terminal) and by the cause
chain: a code upload that lost its connection arrives as an ``AssetException``
caused by a ``ServiceRequestError``, which is transient. A client-side
``ValidationException`` of type ``RESOURCE_NOT_FOUND`` (what
``environments.get(name, label=…)`` raises for a missing asset) is not found;
any other client-side error is terminal.

A translated error names the setting to fix (the call site's ``hint``);
:func:`aml_calls` is the one retried, translated call every Azure ML caller
(the adapter, ``haste aml``, ``haste doctor``) makes, under one budget.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from azure.ai.ml.exceptions import ValidationErrorType, ValidationException

from hastegeo.compute.retry import Classifier, ErrorKind, ProviderCalls, RetryBudget, RetryPolicy

BACKEND = "azure_ml"
COORDINATES = "AML_SUBSCRIPTION_ID, AML_RESOURCE_GROUP and AML_WORKSPACE"
MAX_WAIT_S = 60.0  # a Retry-After longer than this is not waited for within one call
AUTH_HINT = (
    "the identity could not authenticate or lacks access to the workspace: check AML_IDENTITY_MODE "
    f"(and AML_MANAGED_IDENTITY_CLIENT_ID) and the identity's role on {COORDINATES}"
)


def _client_side(exc: BaseException) -> ErrorKind | None:
    if isinstance(exc, ValidationException) and exc.error_type is ValidationErrorType.RESOURCE_NOT_FOUND:
        return ErrorKind.NOT_FOUND
    return None


def _wording(kind: ErrorKind, what: str, reason: str, hint: str) -> str:
    """``Azure ML <what> <outcome> (<Code: message>)``; the outcome names the settings that decide it."""
    if kind is ErrorKind.TRANSIENT:
        outcome = ": temporarily unavailable"
    elif kind is ErrorKind.AUTH:
        outcome = f" {AUTH_HINT}"
    else:
        outcome = f" {'not found' if kind is ErrorKind.NOT_FOUND else 'rejected'}: check {hint}"
    return f"Azure ML {what}{outcome} ({reason})"


AML_ERRORS = Classifier(special=_client_side, backend=BACKEND, wording=_wording)


def aml_calls(attempts: int, delay_s: float, sleep: Callable[[float], None] = time.sleep) -> ProviderCalls:
    """Azure ML's calls: ``attempts`` per call (``AML_RETRY_ATTEMPTS``), waits doubling from ``delay_s``
    (``AML_RETRY_DELAY_S``), ``Retry-After`` honoured up to :data:`MAX_WAIT_S`, the injected sleeper."""
    return ProviderCalls(RetryPolicy(RetryBudget(attempts, delay_s, MAX_WAIT_S), AML_ERRORS, sleep))
