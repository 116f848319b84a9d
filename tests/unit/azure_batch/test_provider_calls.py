"""The one retried, translated provider call: values, project errors, or failures as data; never a raw SDK error."""

from __future__ import annotations

import pytest
from azure.core.exceptions import HttpResponseError, ResourceExistsError, ResourceNotFoundError, ServiceRequestError

from hastegeo.compute.azure_batch.errors import BATCH_ERRORS
from hastegeo.compute.retry import ErrorKind, Failed, ProviderCalls, RetryBudget, RetryPolicy
from hastegeo.utils.errors import TerminalBackendError, TransientBackendError
from tests.unit.azure_batch.test_batch_errors import Flaky, azure_error


def calls(waits: list[float], attempts: int = 3) -> ProviderCalls:
    return ProviderCalls(
        RetryPolicy(RetryBudget(attempts=attempts, backoff_s=1, max_wait_s=20), BATCH_ERRORS, waits.append)
    )


def test_a_spent_budget_is_transient_in_the_project_tree_with_the_last_error_chained() -> None:
    waits: list[float] = []
    errors = [azure_error(HttpResponseError, 503, "ServerBusy") for _ in range(3)]
    with pytest.raises(TransientBackendError) as raised:
        calls(waits).call(Flaky(*errors), what="reading Batch task t1")
    assert raised.value.__cause__ is errors[-1]
    assert (str(raised.value), raised.value.backend) == (
        "reading Batch task t1: ServerBusy: ServerBusy happened",
        "azure_batch",
    )
    assert waits == [1.0, 2.0]


def test_a_terminal_error_is_translated_at_once() -> None:
    waits: list[float] = []
    fn = Flaky(azure_error(HttpResponseError, 403, "AuthenticationFailed"))
    with pytest.raises(TerminalBackendError, match=r"^listing Batch jobs: AuthenticationFailed"):
        calls(waits).call(fn, what="listing Batch jobs")
    assert (fn.calls, waits) == (1, [])


def test_an_answer_kind_is_none_and_another_kind_is_translated() -> None:
    waits: list[float] = []
    gone = Flaky(azure_error(ResourceNotFoundError, 404, "JobNotFound"))
    assert calls(waits).call_unless({ErrorKind.NOT_FOUND}, gone, what="terminating Batch job j1") is None
    with pytest.raises(TerminalBackendError, match="JobExists"):
        calls(waits).call_unless(
            {ErrorKind.NOT_FOUND}, Flaky(azure_error(ResourceExistsError, 409, "JobExists")), what="x"
        )
    assert calls(waits).call_unless({ErrorKind.NOT_FOUND}, Flaky(), what="x") == "ok"


def test_attempt_hands_back_the_failure_as_data_with_the_retried_causes() -> None:
    waits: list[float] = []
    last = azure_error(ResourceNotFoundError, 404, "NodeNotFound")
    got = calls(waits, attempts=4).attempt(
        Flaky(azure_error(ResourceExistsError, 409, "NodeNotReady"), ServiceRequestError("refused"), last), what="read"
    )
    assert isinstance(got, Failed)
    assert (got.kind, got.code, got.reason) == (
        ErrorKind.NODE_GONE,
        "NodeNotFound",
        "NodeNotFound: NodeNotFound happened",
    )
    assert got.retried == ("NodeNotReady: NodeNotReady happened", "ServiceRequestError: refused")
    assert isinstance(got.error, TerminalBackendError)
    assert got.cause is last
    assert calls(waits).attempt(Flaky(), what="read") == "ok"


def test_a_bug_that_is_no_provider_error_propagates_unchanged() -> None:
    with pytest.raises(KeyError):
        calls([]).call(lambda: {}["missing"], what="x")
