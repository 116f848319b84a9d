"""Lowering a process's CPU priority: its nice value, and its session's autogroup only when it leads the session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hastegeo.utils.priority import lower_priority

PROBE = (
    "import json, os, pathlib, sys\n"
    "from hastegeo.utils.priority import lower_priority\n"
    "group = pathlib.Path('/proc/self/autogroup')\n"
    "value = lower_priority(int(sys.argv[1]))\n"
    "shown = group.read_text().split() if group.exists() else []\n"  # empty in the root autogroup
    "print(json.dumps({'returned': value, 'nice': os.nice(0), 'autogroup': shown[-1] if shown else None}))\n"
)
HAS_AUTOGROUP = Path("/proc/self/autogroup").exists()


def autogroup_nice(shown: str) -> str | None:
    """The nice value ``/proc/<pid>/autogroup`` shows, or None for the root autogroup, which shows nothing.

    A process whose session descends from init's without a ``setsid`` (a CI runner's, a
    container's first processes) is in the root autogroup: the kernel prints an empty file.
    """
    return shown.split()[-1] if shown.strip() else None


# The probe at target 5, started in a session of its own by a parent already at nice 7.
PROBE_ARGV = [sys.executable, "-c", "import os; os.setsid(); exec(" + repr(PROBE) + ")", "5"]


def probe(niceness: int, *, new_session: bool) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(niceness)],
        capture_output=True,
        text=True,
        check=True,
        start_new_session=new_session,
    )
    return dict(json.loads(done.stdout))


def test_a_session_leader_lowers_its_nice_value_and_its_autogroup() -> None:
    expected = max(os.nice(0), 4)
    seen = probe(4, new_session=True)
    assert seen == {"returned": expected, "nice": expected, "autogroup": str(expected) if HAS_AUTOGROUP else None}


def test_a_process_already_lower_keeps_its_value_and_still_sets_its_new_autogroup() -> None:
    """A job inherits its worker's nice value; its new session's autogroup starts at 0 all the same."""
    done = subprocess.run(
        [sys.executable, "-c", f"import os, subprocess, sys; os.nice(7); sys.exit(subprocess.call({PROBE_ARGV!r}))"],
        capture_output=True,
        text=True,
        check=True,
        start_new_session=False,
    )
    seen = json.loads(done.stdout)
    expected = max(os.nice(0), 7)
    assert seen == {"returned": expected, "nice": expected, "autogroup": str(expected) if HAS_AUTOGROUP else None}


@pytest.mark.skipif(not HAS_AUTOGROUP, reason="no autogroup scheduling on this system")
def test_a_process_that_shares_its_parents_session_leaves_the_session_autogroup_alone() -> None:
    before = Path("/proc/self/autogroup").read_text()
    seen = probe(4, new_session=False)
    assert seen["nice"] == max(os.nice(0), 4)
    assert seen["autogroup"] == autogroup_nice(before)
    assert Path("/proc/self/autogroup").read_text() == before  # the test's own session, shared with the probe


def test_zero_changes_nothing() -> None:
    assert probe(0, new_session=True)["nice"] == os.nice(0)
    assert lower_priority(0) == os.nice(0)
