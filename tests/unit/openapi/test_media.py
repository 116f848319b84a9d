"""The JSON-only rule for routes that change state, decided from the method, the header and the body."""

from __future__ import annotations

import pytest

from api.media import media_type, unsupported_media


@pytest.mark.parametrize(
    "content_type", ["application/json", "application/json; charset=utf-8", " APPLICATION/Json ;x=y"]
)
def test_json_with_or_without_parameters_is_taken(content_type: str) -> None:
    assert unsupported_media("POST", content_type, b"{}") is None
    assert media_type(content_type) == "application/json"


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "text/plain;charset=UTF-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/problem+json",
        "application/jsonp",
        "application/json, text/plain",
        ";",
        "json",
    ],
)
def test_anything_else_is_refused_even_without_a_body(content_type: str) -> None:
    for method in ("POST", "PUT", "PATCH", "DELETE", "post"):
        reason = unsupported_media(method, content_type, b"")
        assert reason is not None
        assert "application/json" in reason


def test_a_body_needs_a_content_type_and_no_body_needs_none() -> None:
    assert unsupported_media("POST", None, b"{}") == (
        "the request has a body but no Content-Type; send it as application/json"
    )
    assert unsupported_media("POST", "  ", b"x") is not None
    assert unsupported_media("POST", None, b"") is None


def test_methods_that_only_read_are_never_refused() -> None:
    for method in ("GET", "HEAD", "OPTIONS", "get"):
        assert unsupported_media(method, "text/plain", b"x") is None
