"""The console's own refusals carry its security headers too, even when the app's settings cannot be read."""

from __future__ import annotations

import azure.functions as func
import pytest

import api.console as console
from hastegeo.settings.load import get_settings

HANDLER = console.console._function.get_user_function()  # type: ignore[attr-defined]


def test_a_misconfigured_app_answers_503_with_the_policy(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("HASTE_HTTP_AUTH_LEVEL", "none")  # invalid: the settings cannot be loaded
    get_settings.cache_clear()
    try:
        for path, status in (("config.json", 503), ("app.js", 200), ("nope.js", 404)):
            request = func.HttpRequest("GET", f"/api/console/{path}", body=b"", route_params={"path": path})
            response = HANDLER(request)
            assert response.status_code == status, path
            assert "default-src 'none'" in response.headers["Content-Security-Policy"]
            assert response.headers["X-Content-Type-Options"] == "nosniff"
    finally:
        get_settings.cache_clear()
