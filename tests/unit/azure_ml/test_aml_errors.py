"""The one classification of Azure ML errors, and the one retry budget."""

from __future__ import annotations

import pytest
from azure.ai.ml.exceptions import (  # noqa: TID251
    AssetException,
    ErrorTarget,
    MlException,
    ValidationErrorType,
    ValidationException,
)
from azure.core.exceptions import ServiceRequestError, ServiceResponseError

from hastegeo.compute.azure_ml.errors import AML_ERRORS, aml_calls
from hastegeo.compute.retry import ErrorKind, Failed
from hastegeo.utils.errors import TerminalBackendError, TransientBackendError
from hastegeo_dev.testing.aml_standin import http_error, label_not_found


def _asset_error_caused_by(cause: BaseException) -> AssetException:
    try:
        try:
            raise cause
        except Exception as inner:
            raise AssetException(message="upload failed", no_personal_data_message="upload failed") from inner
    except AssetException as outer:
        return outer


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (http_error(429), ErrorKind.TRANSIENT),
        (http_error(500), ErrorKind.TRANSIENT),
        (http_error(503), ErrorKind.TRANSIENT),
        (http_error(408), ErrorKind.TRANSIENT),
        (ServiceRequestError("refused"), ErrorKind.TRANSIENT),
        (ServiceResponseError("reset"), ErrorKind.TRANSIENT),
        (_asset_error_caused_by(ServiceRequestError("upload connection")), ErrorKind.TRANSIENT),
        (_asset_error_caused_by(ValueError("bad path")), ErrorKind.TERMINAL),
        (http_error(400), ErrorKind.TERMINAL),
        (http_error(401), ErrorKind.AUTH),
        (http_error(403), ErrorKind.AUTH),
        (http_error(404), ErrorKind.NOT_FOUND),
        (http_error(409), ErrorKind.EXISTS),
        (label_not_found("env", "latest"), ErrorKind.NOT_FOUND),
        (
            ValidationException(
                message="bad",
                no_personal_data_message="bad",
                target=ErrorTarget.JOB,  # type: ignore[arg-type]
                error_type=ValidationErrorType.INVALID_VALUE,
            ),
            ErrorKind.TERMINAL,
        ),
        (MlException(message="client-side", no_personal_data_message="client-side"), ErrorKind.TERMINAL),
        (RuntimeError("anything else"), ErrorKind.TERMINAL),
    ],
)
def test_classify(exc: BaseException, kind: ErrorKind) -> None:
    assert AML_ERRORS.kind(exc) is kind


def test_translate_names_the_setting_and_strips_diagnostics() -> None:
    error = AML_ERRORS.translate(
        http_error(400, "UserError", "Compute x not found\nRequestId:abc Time:now"), what="submit", hint="AML_COMPUTE"
    )
    assert isinstance(error, TerminalBackendError)
    assert "check AML_COMPUTE" in str(error)
    assert "RequestId" not in str(error)
    assert isinstance(AML_ERRORS.translate(http_error(503), what="get", hint="x"), TransientBackendError)
    assert "AML_IDENTITY_MODE" in str(AML_ERRORS.translate(http_error(401), what="get", hint="x"))


def test_retry_spends_one_budget_and_chains_the_last_error() -> None:
    sleeps: list[float] = []
    errors = [http_error(503, "ServiceUnavailable", str(i)) for i in range(3)]

    def call() -> None:
        raise errors.pop(0)

    with pytest.raises(TransientBackendError) as caught:
        aml_calls(attempts=3, delay_s=1.0, sleep=sleeps.append).call(call, what="get job", hint="x")
    assert sleeps == [1.0, 2.0]
    assert "2" in str(caught.value.__cause__)


def test_retry_does_not_retry_terminal_and_hands_the_error_back_as_data_on_request() -> None:
    sleeps: list[float] = []
    with pytest.raises(TerminalBackendError):
        aml_calls(attempts=3, delay_s=1, sleep=sleeps.append).call(
            lambda: (_ for _ in ()).throw(http_error(403)), what="a", hint="h"
        )
    missing = http_error(404)
    got = aml_calls(attempts=3, delay_s=1, sleep=sleeps.append).attempt(
        lambda: (_ for _ in ()).throw(missing), what="a", hint="h"
    )
    assert isinstance(got, Failed)
    assert (got.kind, got.cause) == (ErrorKind.NOT_FOUND, missing)
    assert sleeps == []
