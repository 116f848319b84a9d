"""Batch's classification table and the one retry policy, without a network and without sleeping."""

from __future__ import annotations

import json
from typing import Any

import pytest
from azure.core.exceptions import (
    HttpResponseError,
    ResourceExistsError,
    ResourceNotFoundError,
    ServiceRequestError,
    ServiceResponseError,
)

from hastegeo.compute.azure_batch.errors import BATCH_ERRORS
from hastegeo.compute.retry import ErrorKind, RetryBudget, RetryPolicy, backend_error, error_facts
from hastegeo.utils.errors import TerminalBackendError, TransientBackendError, describe_exception


class FakeResponse:
    """The part of an azure-core HTTP response that HttpResponseError and error_facts read."""

    def __init__(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        self.status_code = status
        self.reason = "Reason"
        self.headers = headers or {}
        self._text = "" if body is None else json.dumps(body)
        self.content_type = "application/json"
        self.request = None

    def read(self) -> bytes:
        return self._text.encode()

    def text(self, encoding: str | None = None) -> str:
        return self._text

    def body(self) -> bytes:
        return self._text.encode()


def batch_body(code: str, message: str = "m") -> dict[str, Any]:
    return {"code": code, "message": {"lang": "en-US", "value": f"{message}\nRequestId:abc\nTime:2026"}}


def azure_error(cls: type[HttpResponseError], status: int, code: str, **headers: str) -> HttpResponseError:
    """An SDK error whose ``.error`` carries the code (how non-streamed Batch errors arrive)."""
    exc = cls(response=FakeResponse(status, {"error": {"code": code, "message": f"{code} happened"}}, headers))
    assert getattr(exc.error, "code", None) == code
    return exc


@pytest.mark.parametrize(
    ("code", "status", "kind"),
    [
        ("NodeNotReady", 409, ErrorKind.NODE_TRANSITION),
        ("NodeStateInvalid", 409, ErrorKind.NODE_TRANSITION),
        ("NodeBeingRebooted", 409, ErrorKind.NODE_TRANSITION),
        ("NodeBeingSomethingNew", 409, ErrorKind.NODE_TRANSITION),
        ("NodeNotFound", 404, ErrorKind.NODE_GONE),
        ("NodeStateUnusable", 409, ErrorKind.NODE_GONE),
        ("TaskFilesUnavailable", 409, ErrorKind.NODE_GONE),
        ("TaskFilesCleanedup", 409, ErrorKind.NODE_GONE),
        ("ServerBusy", 503, ErrorKind.TRANSIENT),
        ("OperationTimedOut", 500, ErrorKind.TRANSIENT),
        ("InternalError", 500, ErrorKind.TRANSIENT),
        ("TooManyRequests", 429, ErrorKind.TRANSIENT),
        (None, 502, ErrorKind.TRANSIENT),
        (None, 429, ErrorKind.TRANSIENT),
        ("JobExists", 409, ErrorKind.EXISTS),
        ("TaskExists", 409, ErrorKind.EXISTS),
        ("JobCompleted", 409, ErrorKind.FINISHED),
        ("TaskCompleted", 409, ErrorKind.FINISHED),
        ("JobNotFound", 404, ErrorKind.NOT_FOUND),
        ("FileNotFound", 404, ErrorKind.NOT_FOUND),
        (None, 404, ErrorKind.NOT_FOUND),
        ("OperationInvalidForCurrentState", 409, ErrorKind.TERMINAL),
        ("AuthenticationFailed", 403, ErrorKind.TERMINAL),
        ("InvalidRequestBody", 400, ErrorKind.TERMINAL),
        (None, None, ErrorKind.TERMINAL),
    ],
)
def test_classification_table(code: str | None, status: int | None, kind: ErrorKind) -> None:
    assert BATCH_ERRORS.kind_of(code, status) is kind


def test_the_code_wins_over_the_exception_class() -> None:
    # azure-batch raises ResourceExistsError for every 409, NodeNotReady included.
    assert BATCH_ERRORS.kind(azure_error(ResourceExistsError, 409, "NodeNotReady")) is ErrorKind.NODE_TRANSITION
    assert BATCH_ERRORS.kind(azure_error(ResourceExistsError, 409, "NodeStateInvalid")) is ErrorKind.NODE_TRANSITION
    assert BATCH_ERRORS.kind(azure_error(ResourceExistsError, 409, "TaskExists")) is ErrorKind.EXISTS
    assert BATCH_ERRORS.kind(azure_error(ResourceNotFoundError, 404, "NodeNotFound")) is ErrorKind.NODE_GONE


def test_streamed_download_error_code_is_read_from_the_body() -> None:
    # A streamed download raises before its body is parsed: exc.error is None, the code is in the body.
    exc = ResourceExistsError(response=FakeResponse(409, batch_body("NodeNotReady")))
    exc.error = None  # what BatchExceptionPolicy leaves on a streamed response (body not read yet)
    facts = error_facts(exc)
    assert (facts.code, facts.status, BATCH_ERRORS.kind(exc)) == ("NodeNotReady", 409, ErrorKind.NODE_TRANSITION)


def test_head_errors_without_a_body_fall_back_to_the_status() -> None:
    assert BATCH_ERRORS.kind(HttpResponseError(response=FakeResponse(503))) is ErrorKind.TRANSIENT
    assert BATCH_ERRORS.kind(ResourceNotFoundError(response=FakeResponse(404))) is ErrorKind.NOT_FOUND


def test_transport_failures_are_transient_pseudo_codes() -> None:
    assert BATCH_ERRORS.kind(ServiceRequestError("refused")) is ErrorKind.TRANSIENT
    assert BATCH_ERRORS.kind(ServiceResponseError("dropped")) is ErrorKind.TRANSIENT
    assert BATCH_ERRORS.kind(ValueError("not azure")) is ErrorKind.TERMINAL


def test_retry_after_is_read_in_seconds_and_milliseconds() -> None:
    assert (
        error_facts(azure_error(HttpResponseError, 429, "TooManyRequests", **{"Retry-After": "7"})).retry_after_s == 7
    )
    assert (
        error_facts(azure_error(HttpResponseError, 503, "ServerBusy", **{"retry-after-ms": "250"})).retry_after_s
        == 0.25
    )
    dated = azure_error(HttpResponseError, 503, "ServerBusy", **{"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"})
    assert error_facts(dated).retry_after_s is None


class Flaky:
    """Fails with the given exceptions in order, then returns ``"ok"``."""

    def __init__(self, *failures: BaseException) -> None:
        self.failures = list(failures)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return "ok"


def test_transient_errors_are_retried_with_exponential_waits_and_no_real_sleep() -> None:
    waits: list[float] = []
    fn = Flaky(azure_error(HttpResponseError, 503, "ServerBusy"), azure_error(ResourceExistsError, 409, "NodeNotReady"))
    assert (
        RetryPolicy(RetryBudget(attempts=4, backoff_s=0.5, max_wait_s=10), BATCH_ERRORS, waits.append).call(fn) == "ok"
    )
    assert fn.calls == 3
    assert waits == [0.5, 1.0]


def test_retry_after_is_honoured_and_capped() -> None:
    waits: list[float] = []
    fn = Flaky(
        azure_error(HttpResponseError, 429, "TooManyRequests", **{"Retry-After": "3"}),
        azure_error(HttpResponseError, 429, "TooManyRequests", **{"Retry-After": "600"}),
    )
    assert RetryPolicy(RetryBudget(attempts=3, backoff_s=1, max_wait_s=20), BATCH_ERRORS, waits.append).call(fn) == "ok"
    assert waits == [3.0, 20.0]


def test_a_spent_budget_reraises_the_original_azure_exception() -> None:
    waits: list[float] = []
    errors = [azure_error(HttpResponseError, 500, "InternalError") for _ in range(5)]
    fn = Flaky(*errors)
    with pytest.raises(HttpResponseError) as raised:
        RetryPolicy(RetryBudget(attempts=3, backoff_s=1, max_wait_s=20), BATCH_ERRORS, waits.append).call(fn)
    assert raised.value is errors[2]  # the last attempt's own exception, not tenacity's RetryError
    assert fn.calls == 3
    assert len(waits) == 2
    assert describe_exception(raised.value).startswith("InternalError")


@pytest.mark.parametrize("code", ["TaskExists", "NodeNotFound", "JobCompleted", "AuthenticationFailed"])
def test_non_retryable_codes_fail_at_once(code: str) -> None:
    waits: list[float] = []
    fn = Flaky(azure_error(ResourceExistsError, 409, code))
    with pytest.raises(ResourceExistsError):
        RetryPolicy(RetryBudget(attempts=5), BATCH_ERRORS, waits.append).call(fn)
    assert (fn.calls, waits) == (1, [])


def test_an_answer_kind_is_none_after_retries_and_anything_else_is_raised() -> None:
    waits: list[float] = []
    policy = RetryPolicy(RetryBudget(attempts=4, backoff_s=1, max_wait_s=20), BATCH_ERRORS, waits.append)
    ended = frozenset({ErrorKind.FINISHED, ErrorKind.NOT_FOUND})
    busy_then_gone = Flaky(
        azure_error(HttpResponseError, 503, "ServerBusy"), azure_error(ResourceNotFoundError, 404, "JobNotFound")
    )
    assert policy.call_unless(ended, busy_then_gone) is None  # the transient error was retried first
    assert (busy_then_gone.calls, waits) == (2, [1.0])
    assert policy.call_unless(ended, Flaky()) == "ok"
    exists = azure_error(ResourceExistsError, 409, "JobExists")
    with pytest.raises(ResourceExistsError) as raised:
        policy.call_unless(ended, Flaky(exists))
    assert raised.value is exists


@pytest.mark.parametrize(
    ("code", "status", "error"),
    [
        ("ServerBusy", 503, TransientBackendError),
        ("NodeNotReady", 409, TransientBackendError),
        ("JobExists", 409, TerminalBackendError),
    ],
)
def test_backend_error_is_transient_only_where_a_retry_could_help(
    code: str, status: int, error: type[Exception]
) -> None:
    made = backend_error(
        BATCH_ERRORS.kind(azure_error(HttpResponseError, status, code)), "it failed", backend="azure_batch"
    )
    assert type(made) is error
    assert (str(made), made.backend) == ("it failed", "azure_batch")
