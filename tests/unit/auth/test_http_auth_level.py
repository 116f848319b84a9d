"""HASTE_HTTP_AUTH_LEVEL decides whether the Functions host asks for a function key (ADR 0007, addendum).

``function_app.py`` is imported in a fresh interpreter per value, as the Functions worker
indexes it, and the auth level of every HTTP trigger is read back from the real FunctionApp.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from hastegeo.settings.app import HttpAuthLevel, http_auth_level
from hastegeo.settings.load import load_settings
from hastegeo.utils.errors import ConfigurationError
from tests.drift.conftest import REPO

# The web console's files and settings hold no data; its API calls are authenticated (docs/adr/0014).
ALWAYS_ANONYMOUS = {"health", "openapi", "console"}
READ_LEVELS = """
import json, function_app
levels = {}
for function in function_app.app.get_functions():
    trigger = function.get_trigger().get_dict_repr()
    if trigger.get("type") == "httpTrigger":
        levels[function.get_function_name()] = str(trigger["authLevel"]).split(".")[-1].lower()
print(json.dumps(levels))
"""


def trigger_levels(value: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "HASTE_HTTP_AUTH_LEVEL"}
    if value is not None:
        env["HASTE_HTTP_AUTH_LEVEL"] = value
    result = subprocess.run(
        [sys.executable, "-c", READ_LEVELS], cwd=REPO, env=env, capture_output=True, text=True, check=True, timeout=60
    )
    levels: dict[str, str] = json.loads(result.stdout)
    assert set(levels) > ALWAYS_ANONYMOUS, levels
    return levels


@pytest.mark.parametrize(
    ("value", "expected"), [(None, "anonymous"), ("anonymous", "anonymous"), ("function", "function")]
)
def test_the_protected_routes_follow_the_setting(value: str | None, expected: str) -> None:
    levels = trigger_levels(value)
    protected = {name: level for name, level in levels.items() if name not in ALWAYS_ANONYMOUS}
    assert {"submit_job", "get_job", "list_jobs", "cancel_job", "retry_job", "list_backends"} <= set(protected)
    assert set(protected.values()) == {expected}
    assert {levels[name] for name in ALWAYS_ANONYMOUS} == {"anonymous"}


def test_an_invalid_value_fails_closed_at_import_and_loudly_at_the_first_request() -> None:
    assert http_auth_level({"HASTE_HTTP_AUTH_LEVEL": "none"}) is HttpAuthLevel.FUNCTION
    assert set(trigger_levels("none").values()) == {"function", "anonymous"}
    with pytest.raises(ConfigurationError, match="HASTE_HTTP_AUTH_LEVEL"):
        load_settings({"AzureWebJobsStorage": "UseDevelopmentStorage=true", "HASTE_HTTP_AUTH_LEVEL": "none"})


def test_the_default_and_the_parsed_value_agree() -> None:
    assert http_auth_level({}) is HttpAuthLevel.ANONYMOUS
    settings = load_settings({"AzureWebJobsStorage": "UseDevelopmentStorage=true", "HASTE_HTTP_AUTH_LEVEL": "function"})
    assert settings.auth.http_auth_level is http_auth_level({"HASTE_HTTP_AUTH_LEVEL": "function"})
