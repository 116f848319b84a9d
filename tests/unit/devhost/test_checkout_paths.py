"""Every path the development tools compute from their own location holds from a folder outside the checkout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]

PROBE = """
import json
from pathlib import Path
from hastegeo_dev.checkout import OWN_CHECKOUT, repo_root
from hastegeo_dev.cli import default_workdir
from hastegeo_dev.devhost.azurite import find_azurite
from hastegeo_dev.stack import LocalStack
print(json.dumps({"own": str(OWN_CHECKOUT), "root": str(repo_root()), "azurite": find_azurite(),
                  "workdir": str(default_workdir()), "stack": str(LocalStack(Path("w")).root)}))
"""


def test_paths_from_a_folder_outside_the_checkout(tmp_path: Path) -> None:
    # No azurite on PATH: the launcher must come from the checkout's node_modules, found from the package.
    env = {**os.environ, "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    )
    found = json.loads(result.stdout)
    assert found == {
        "own": str(REPO),
        "root": str(REPO),
        "azurite": str(REPO / "node_modules" / ".bin" / "azurite"),
        "workdir": str(REPO / ".haste" / "dev"),
        "stack": str(REPO),  # the app the stack's host serves, and its host.json
    }


def test_the_development_commands_answer_from_outside_the_checkout(tmp_path: Path) -> None:
    for command in (["dev", "--help"], ["demo", "--help"]):
        result = subprocess.run(
            [sys.executable, "-m", "hastegeo_dev", *command], cwd=tmp_path, capture_output=True, text=True
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith(f"usage: haste {command[0]}")
