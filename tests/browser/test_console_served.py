"""The console is part of the Functions app: the development host serves it with its headers, anonymously."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from hastegeo_dev.stack import LocalStack

pytestmark = [pytest.mark.azurite, pytest.mark.slow]


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    opener = urllib.request.build_opener(_NoRedirect)
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with opener.open(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def test_files_have_their_content_types_a_strict_policy_and_revalidate(console_stack: LocalStack) -> None:
    base = console_stack.console_url
    for name, content_type in [
        ("", "text/html"),
        ("index.html", "text/html"),
        ("app.js", "text/javascript"),
        ("console.css", "text/css"),
    ]:
        status, headers, body = _get(base + name)
        assert status == 200, name
        assert headers["Content-Type"].startswith(content_type), name
        policy = headers["Content-Security-Policy"]
        assert "script-src 'self'" in policy
        assert "style-src 'self'" in policy
        assert "unsafe-inline" not in policy
        assert "unsafe-eval" not in policy
        assert "frame-ancestors 'none'" in policy
        assert f"img-src 'self' http://127.0.0.1:{console_stack.azurite.blob_url.split(':')[2].split('/')[0]}" in policy
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert headers["Cache-Control"] == "no-cache"
        status, _, again = _get(base + name, {"If-None-Match": headers["ETag"]})
        assert (status, again) == (304, b"")
        assert body


def test_the_page_has_no_inline_script_or_style(console_stack: LocalStack) -> None:
    _, _, body = _get(console_stack.console_url)
    html = body.decode()
    assert "<script>" not in html
    assert "style=" not in html
    assert "<style" not in html
    assert '<script type="module" src="app.js"></script>' in html


def test_the_bare_route_redirects_and_unknown_files_are_404_without_touching_the_disk(
    console_stack: LocalStack,
) -> None:
    status, headers, _ = _get(f"{console_stack.base_url}/api/console")
    assert (status, headers["Location"]) == (308, "/api/console/")
    for name in ("missing.js", "..%2Ffunction_app.py", "../host.json", "%2e%2e/requirements.txt", "a/app.js"):
        status, headers, _body = _get(console_stack.console_url + name)
        assert status == 404, name
        assert headers["Content-Type"].startswith("application/problem+json"), name


def test_config_names_the_api_and_says_no_sign_in_in_development(console_stack: LocalStack) -> None:
    status, headers, body = _get(console_stack.console_url + "config.json")
    assert status == 200
    assert headers["Cache-Control"] == "no-store"
    config = json.loads(body)
    assert config["apiBase"] == "/api"
    assert config["auth"] == {"mode": "none"}
    assert config["storageOrigin"].startswith("http://127.0.0.1:")


def _send(url: str, method: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str]]:
    """One request with any method (a body for those that carry one), no redirects followed."""
    body = b"{}" if method in ("POST", "PUT", "PATCH", "DELETE") else None
    sent = {**({"Content-Type": "application/json"} if body else {}), **(headers or {})}
    request = urllib.request.Request(url, data=body, method=method, headers=sent)
    try:
        with urllib.request.build_opener(_NoRedirect).open(request, timeout=10) as response:
            return response.status, dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers)


def test_every_console_answer_errors_included_carries_the_policy_and_nosniff(console_stack: LocalStack) -> None:
    """Every path under /api/console (page, files, settings, unknown and deeper names) with every method,
    and conditional reads: 200, 304, 308, 404 and 405 all carry the same security headers."""
    from api.console import static_files

    base = f"{console_stack.base_url}/api/console"
    paths = ["", "/", "/config.json", *(f"/{name}" for name in static_files())]
    paths += [
        "/missing.js",
        "/a/app.js",
        "/..%2Fhost.json",
        "/%2e%2e/requirements.txt",
        "/config.json/x",
        "/index.html?x=1",
    ]
    seen: dict[int, int] = {}
    for path in paths:
        for method in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"):
            status, headers = _send(base + path, method)
            seen[status] = seen.get(status, 0) + 1
            where = f"{method} /api/console{path} -> {status}"
            assert "script-src 'self'" in headers.get("Content-Security-Policy", ""), where
            assert "frame-ancestors 'none'" in headers["Content-Security-Policy"], where
            assert headers.get("X-Content-Type-Options") == "nosniff", where
            assert headers.get("X-Frame-Options") == "DENY", where
            if method not in ("GET", "HEAD"):
                assert status == 405, where
                assert headers["Allow"] == "GET, HEAD", where
            if method == "GET" and status == 200 and "ETag" in headers:
                again, again_headers = _send(base + path, "GET", {"If-None-Match": headers["ETag"]})
                seen[again] = seen.get(again, 0) + 1
                assert again == 304, where
                assert again_headers.get("X-Content-Type-Options") == "nosniff", where
                assert "script-src 'self'" in again_headers.get("Content-Security-Policy", ""), where
    assert set(seen) == {200, 304, 308, 404, 405}, seen
