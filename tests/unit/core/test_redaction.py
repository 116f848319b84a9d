"""Redaction and readable errors: no secret survives, the operator still understands the line."""

from __future__ import annotations

import io
import logging
from types import SimpleNamespace

import pytest

from hastegeo.utils.errors import TransientBackendError, describe_exception
from hastegeo.utils.redaction import REDACTED, RedactingFilter, install_redacting_filter, redact, secret_spans

SAS_URL = (
    "https://acct.blob.core.windows.net/c/b.tif?sv=2024-11-04&se=2026-12-01T00%3A00%3A00Z&sr=b&sp=r"
    "&sig=AbCdEf0123456789%2Bxyz%3D"
)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (SAS_URL, "AbCdEf0123456789%2Bxyz%3D"),
        (
            "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=c2VjcmV0a2V5PT0=;EndpointSuffix=x",
            "c2VjcmV0a2V5PT0=",
        ),
        ("Authorization: Bearer eyJhbGciOi.eyJzdWIiOiIx.c2lnbmF0dXJl", "eyJzdWIiOiIx"),
        ("{'account_key': 'topsecret', 'url': 'x'}", "topsecret"),
        ('{"accessToken": "tok-123"}', "tok-123"),
        ("SharedKey devstoreaccount1:abc123+/=", "abc123+/="),
        ("https://app.azurewebsites.net/api/jobs?code=functionkey123", "functionkey123"),
        ("skoid=1&sktid=2&sig=zzz", "zzz"),
    ],
)
def test_secrets_are_redacted(text: str, secret: str) -> None:
    cleaned = redact(text)
    assert secret not in cleaned
    assert REDACTED in cleaned


def test_ordinary_text_is_untouched() -> None:
    text = 'NodeNotReady: {"code": "NodeNotReady", "values": [{"key": "NodeId"}]}'
    assert redact(text) == text


class AzureLikeError(Exception):
    """The shape of an azure-core HttpResponseError, without importing a provider SDK."""

    def __init__(self, code: str, message: object) -> None:
        super().__init__(f"({code}) raw dump")
        self.error = SimpleNamespace(code=code, message=message)


def test_describe_strips_the_request_id_trailer() -> None:
    exc = AzureLikeError(
        "NodeNotReady",
        {
            "lang": "en-US",
            "value": "Node is not able to perform the requested operations in its current state\n"
            "RequestId:6c1a2b3c-0000-4000-8000-000000000000\nTime:2026-08-12T21:09:00.0000000Z",
        },
    )
    assert describe_exception(exc) == (
        "NodeNotReady: Node is not able to perform the requested operations in its current state"
    )


def test_describe_redacts_a_sas_url_in_the_message() -> None:
    exc = AzureLikeError("AuthenticationFailed", f"Server failed to authenticate {SAS_URL}")
    line = describe_exception(exc)
    assert line.startswith("AuthenticationFailed: Server failed to authenticate")
    assert "AbCdEf" not in line


def test_describe_plain_and_project_errors() -> None:
    assert describe_exception(ValueError("bad value")) == "ValueError: bad value"
    assert describe_exception(TransientBackendError("ServerBusy: try later")) == "ServerBusy: try later"


def test_describe_parses_azure_core_first_line() -> None:
    assert describe_exception(RuntimeError("(JobExists) The job exists.\nCode: JobExists")) == (
        "JobExists: The job exists."
    )


def test_logging_filter_redacts_messages_args_and_tracebacks(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("test.redaction")
    handler = caplog.handler
    handler.addFilter(RedactingFilter())
    try:
        try:
            raise RuntimeError(f"download failed for {SAS_URL}")
        except RuntimeError:
            logger.exception("fetching %s", SAS_URL)
    finally:
        handler.removeFilter(handler.filters[-1])
    text = caplog.text
    assert "AbCdEf0123456789" not in text
    assert "fetching https://acct.blob.core.windows.net/c/b.tif" in text


def test_the_first_handler_to_see_a_record_gets_it_redacted_traceback_and_all() -> None:
    """The filter renders the traceback itself when no handler has yet: a formatter rendering it
    after the filter ran would write the secret. A record whose arguments do not fit its format is
    kept (as its format), and installing the filter twice leaves one per handler."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("test.redaction.first")
    logger.propagate = False
    logger.addHandler(handler)
    try:
        install_redacting_filter(logger)
        install_redacting_filter(logger)
        assert [type(f) for f in handler.filters] == [RedactingFilter]
        try:
            raise RuntimeError(f"download failed for {SAS_URL}")
        except RuntimeError:
            logger.exception("fetching")
        logger.error("no traceback, sig=%s", "AbCdEf0123456789")
        logger.error("arguments that do not fit %s %s", "sig=AbCdEf0123456789")
    finally:
        logger.removeHandler(handler)
    text = stream.getvalue()
    assert "AbCdEf0123456789" not in text
    assert "RuntimeError: download failed for https://acct.blob.core.windows.net/c/b.tif?" in text
    assert f"no traceback, sig={REDACTED}" in text
    assert "arguments that do not fit %s %s" in text


def test_describe_a_real_storage_error_by_its_code_value() -> None:
    """azure-storage puts an enum in ``error_code``; the line shows its value, not the enum's repr."""
    from azure.core.exceptions import HttpResponseError
    from azure.storage.blob import StorageErrorCode

    exc = HttpResponseError(message="Server failed to authenticate the request.\nRequestId:r1\nTime:2026")
    exc.error_code = StorageErrorCode.AUTHORIZATION_FAILURE  # type: ignore[attr-defined]
    assert describe_exception(exc) == "AuthorizationFailure: Server failed to authenticate the request."


def test_secret_spans_say_where_each_rule_matches() -> None:
    text = "get https://a.blob.core.windows.net/c/b?sv=1&sig=abc%3D&se=2 with Bearer eyJ0.e30.sig done"
    spans = sorted(secret_spans(text))
    assert [text[start:end] for start, end in spans] == ["sig=abc%3D", "Bearer eyJ0.e30.sig", "eyJ0.e30.sig"]
    assert secret_spans("nothing to hide here") == []
