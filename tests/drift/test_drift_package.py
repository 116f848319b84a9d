"""The drift check stays small and typed: one job per module, every module under mypy --strict."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

from tests.drift.conftest import REPO, SCRIPT, SCRIPTS

PACKAGE = SCRIPTS / "settings_drift"


def test_each_module_does_one_job_in_a_few_hundred_lines() -> None:
    modules = sorted(PACKAGE.glob("*.py"))
    assert len(modules) >= 8
    sizes = {path.name: len(path.read_text(encoding="utf-8").splitlines()) for path in modules}
    assert {name: size for name, size in sizes.items() if size > 300} == {}
    assert len(SCRIPT.read_text(encoding="utf-8").splitlines()) < 40  # the script only runs the package


def test_the_package_and_its_tests_are_type_checked() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    assert config["strict"] is True
    assert ".github/scripts" in config["files"]
    assert "tests/drift" in config["files"]
    assert config["mypy_path"] == ".github/scripts"


def test_the_script_runs_from_anywhere(tmp_path: Path) -> None:
    """CI and the deploy workflow run the script by path, from a directory that is not the package's."""
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--markdown"], cwd=str(tmp_path), capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("| Setting | Meaning | Default | Needed when | Set by |")
