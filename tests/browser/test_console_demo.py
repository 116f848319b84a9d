"""`make demo` and `make demo KEEP=1`: the chain of real jobs runs through the HTTP API, and with
``--serve`` the demo prints the console's address and keeps serving it until Ctrl-C.

One run of the demo shows both (the chain is the same either way; ``--serve`` only keeps the stack up
after it): the README's first command is this run minus the serving.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hastegeo_dev.checkout import repo_root

pytestmark = [pytest.mark.azurite, pytest.mark.slow]


def test_demo_serves_the_console_until_interrupted(browser: Any, shoot: Callable[[Any, str], Path]) -> None:
    demo = subprocess.Popen(
        [sys.executable, "-m", "hastegeo_dev", "demo", "--serve"],
        cwd=repo_root(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert demo.stdout is not None
        lines: list[str] = []
        deadline = time.monotonic() + 240
        while not any(line.startswith("Serving the web console at") for line in lines):
            line = demo.stdout.readline()
            assert line or demo.poll() is None, "".join(lines)
            assert time.monotonic() < deadline, "".join(lines)
            lines.append(line)
        output = "".join(lines)
        # The chain (`make demo`): every job succeeded, and the packaging job's outputs are listed.
        assert "succeeded" in output
        assert "outputs/artifacts.zip" in output
        # Inference on every tile as one group; the packaging job waited for the whole group, then ran.
        assert re.search(r"POST /api/groups -> inference group (g\w+): 4 tiles", output), output
        assert "[" + "=" * 30 + "] 4/4 ended  4 succeeded" in output
        assert re.search(r"artifacts job k\w+, after: \[g\w+\]", output), output
        assert "everything it waited for succeeded; submitting" in output
        announced = re.search(r"web console at (http://127\.0\.0\.1:\d+/api/console/)", output)
        assert announced, output
        serving = re.search(r"Serving the web console at (\S+)", output)
        assert serving, output
        assert serving.group(1) == announced.group(1)
        context = browser.new_context(base_url=announced.group(1))
        page = context.new_page()
        page.goto("#/jobs?project=demo")
        page.locator("#page-where").filter(has_text="job(s)").wait_for()
        states = page.locator("table.jobs tbody tr .badge").all_text_contents()
        assert set(states) == {"succeeded"}, states
        finished = re.search(r"^(\d+) jobs in ", output, re.MULTILINE)
        assert finished, output
        assert len(states) == int(finished.group(1))
        shoot(page, "demo-jobs")
        context.close()
        demo.send_signal(signal.SIGINT)
        rest, _ = demo.communicate(timeout=60)
        assert demo.returncode == 0, output + rest
        assert "stopping" in rest
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
