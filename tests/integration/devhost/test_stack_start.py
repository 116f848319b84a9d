"""A stack whose host fails to start leaves nothing running: ``__exit__`` never runs after a failed ``__enter__``."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest

from hastegeo_dev.readiness import StartBound
from hastegeo_dev.stack import HostProcess, LocalStack, free_port

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


class _Silent(HostProcess):
    """A "host" that never answers and never uses CPU: a hung start."""

    name = "silent host"
    start_bound = StartBound(stall_s=1.5, cpu_s=60.0, wall_s=60.0)

    def command(self) -> list[str]:
        return [sys.executable, "-c", "import time; time.sleep(120)"]


class _Spinning(_Silent):
    """A "host" that never answers and burns CPU: a start that loops."""

    name = "spinning host"
    start_bound = StartBound(stall_s=60.0, cpu_s=1.0, wall_s=60.0)

    def command(self) -> list[str]:
        return [sys.executable, "-c", "while True: pass"]


@pytest.mark.parametrize(
    ("host_class", "reason"), [(_Silent, "no progress for 2s"), (_Spinning, "not ready after 1s of CPU time")]
)
def test_a_start_that_cannot_finish_is_given_up_with_its_reason_and_killed(
    tmp_path: Path, host_class: type[_Silent], reason: str
) -> None:
    host = host_class(tmp_path, dict(os.environ), free_port(), tmp_path / "host.log")
    with pytest.raises(RuntimeError, match=f"the {host_class.name} did not answer /api/health: {reason}"):
        host.start()
    assert host.process is None  # killed and forgotten, not left running
