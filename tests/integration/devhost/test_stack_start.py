"""A stack whose host fails to start leaves nothing running: ``__exit__`` never runs after a failed ``__enter__``."""

from __future__ import annotations

import socket
from pathlib import Path
from urllib.parse import urlparse

import pytest

from hastegeo_dev.stack import LocalStack

pytestmark = [pytest.mark.azurite]


def test_a_host_that_fails_to_start_takes_its_azurite_down_with_it(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    app_less = tmp_path / "no-app"  # no function_app here: the host exits during start-up
    app_less.mkdir()
    stack = LocalStack(tmp_path / "work", root=app_less)
    request.addfinalizer(stack.azurite.stop)  # should the fix regress: no Azurite outlives the test
    with pytest.raises(RuntimeError, match="development host"), stack:
        pass
    port = urlparse(stack.azurite.blob_url).port
    assert port is not None
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port), timeout=5):
        pass
