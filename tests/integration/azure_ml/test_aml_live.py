"""Opt-in: ``haste aml check`` against a real workspace. Skipped unless its variables are set.

Set AML_SUBSCRIPTION_ID, AML_RESOURCE_GROUP and AML_WORKSPACE (AML_MODE
defaults to Existing here) and have credentials for AML_IDENTITY_MODE
(``default`` uses your ``az login``). The check only reads: it creates nothing.
"""

from __future__ import annotations

import io
import os

import pytest

from hastegeo.cli import aml

COORDINATES = ("AML_SUBSCRIPTION_ID", "AML_RESOURCE_GROUP", "AML_WORKSPACE")

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(
        not all(os.environ.get(name) for name in COORDINATES),
        reason="live Azure ML test: set " + ", ".join(COORDINATES),
    ),
]


def test_live_workspace_check() -> None:
    environ = {"AML_MODE": "Existing", "AML_IDENTITY_MODE": "default", **os.environ}
    out = io.StringIO()
    code = aml.run_check(environ=environ, out=out)
    text = out.getvalue()
    assert f"found: workspace {environ['AML_WORKSPACE']}" in text, text
    assert code in (0, 1), text
