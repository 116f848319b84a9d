"""``LocalStack.serve`` (``make dev``, ``make demo KEEP=1``) ends on SIGINT or SIGTERM, whatever it inherited."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from hastegeo_dev.stack import HostProcess, LocalStack


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[LocalStack]:
    """A stack whose host is a stand-in process (serve only watches it); nothing else is started."""
    stack = LocalStack(tmp_path, port=1)
    stack.host = HostProcess(tmp_path, {}, 1, tmp_path / "host.log")
    stack.host.process = subprocess.Popen(["sleep", "60"])
    yield stack
    stack.host.process.kill()
    stack.host.process.wait()


def signal_soon(signum: int) -> threading.Timer:
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signum))
    timer.start()
    return timer


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_serve_stops_on_a_signal_and_gives_the_old_handler_back(
    stack: LocalStack, signum: int, capsys: pytest.CaptureFixture[str]
) -> None:
    before = signal.getsignal(signum)
    timer = signal_soon(signum)
    stack.serve()
    timer.join()
    assert capsys.readouterr().out == "stopping\n"
    assert signal.getsignal(signum) is before


def test_serve_stops_on_sigint_even_when_started_with_sigint_ignored(
    stack: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    """A shell that starts a command in the background leaves SIGINT ignored; serve still answers it."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        signal_soon(signal.SIGINT)
        stack.serve()
        assert capsys.readouterr().out == "stopping\n"
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


def test_serve_returns_when_the_host_stops_by_itself(stack: LocalStack, capsys: pytest.CaptureFixture[str]) -> None:
    assert stack.host is not None
    assert stack.host.process is not None
    stack.host.process.terminate()
    stack.serve()
    assert capsys.readouterr().out == ""
