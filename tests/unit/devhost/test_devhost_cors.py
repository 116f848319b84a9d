"""CORS decisions: allowed origins get preflight answers and ACAO; others get nothing."""

from __future__ import annotations

from hastegeo_dev.devhost.cors import CorsPolicy, is_preflight


def test_no_origin_is_allowed_by_default() -> None:
    policy = CorsPolicy.from_origins(None)
    assert not policy.allows("http://localhost:3000")
    assert policy.preflight_headers("http://localhost:3000", "POST", None) is None
    assert policy.response_headers("http://localhost:3000") == {}


def test_allowed_origin_preflight_echoes_the_request() -> None:
    policy = CorsPolicy.from_origins(["http://LOCALHOST:3000/"], max_age_seconds=600)
    headers = policy.preflight_headers("http://localhost:3000", "post", "content-type, x-trace")
    assert headers == {
        "Access-Control-Allow-Origin": "http://localhost:3000",
        "Access-Control-Allow-Methods": "POST",
        "Access-Control-Allow-Headers": "content-type, x-trace",
        "Access-Control-Max-Age": "600",
        "Vary": "Origin",
    }
    assert policy.response_headers("http://localhost:3000") == {
        "Access-Control-Allow-Origin": "http://localhost:3000",
        "Vary": "Origin",
    }
    assert policy.preflight_headers("http://evil.example", "POST", None) is None
    assert policy.response_headers(None) == {}


def test_wildcard_allows_any_origin() -> None:
    policy = CorsPolicy.from_origins(["*"])
    assert policy.allows("https://anything.example")
    assert policy.response_headers("https://a.example")["Access-Control-Allow-Origin"] == "https://a.example"


def test_preflight_detection() -> None:
    assert is_preflight("OPTIONS", "http://a", "GET")
    assert not is_preflight("OPTIONS", None, "GET")
    assert not is_preflight("OPTIONS", "http://a", None)
    assert not is_preflight("GET", "http://a", "GET")
