"""Fixtures for the drift check: the script as a module, and a temporary copy of the tree to break."""

from __future__ import annotations

import importlib
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / ".github" / "scripts"
SCRIPT = SCRIPTS / "check_drift.py"


def load_drift() -> ModuleType:
    """The drift check's package (``.github/scripts/settings_drift``), which re-exports what tests use."""
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    return importlib.import_module("settings_drift")


@pytest.fixture(scope="session")
def drift() -> ModuleType:
    return load_drift()


@pytest.fixture(scope="session")
def code(drift: ModuleType) -> dict[str, object]:
    """The settings the code declares, read once per session."""
    return dict(drift.code_settings())


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of infra/, .github/ and docs/deploy.md: everything the drift check reads."""
    root = tmp_path / "repo"
    shutil.copytree(REPO / "infra", root / "infra")
    shutil.copytree(REPO / ".github", root / ".github", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "docs").mkdir()
    shutil.copy2(REPO / "docs" / "deploy.md", root / "docs" / "deploy.md")
    return root


Edit = Callable[[str], str]


def edit(path: Path, change: Edit) -> None:
    """Rewrite one file of the copy, failing loudly if the change did nothing."""
    before = path.read_text(encoding="utf-8")
    after = change(before)
    assert after != before, f"the edit did not change {path}"
    path.write_text(after, encoding="utf-8")


def replace_line(old: str, new: str) -> Edit:
    """Replace the one line whose stripped text is ``old``; ``new`` keeps its indentation."""

    def change(text: str) -> str:
        lines = text.splitlines(keepends=True)
        hits = [i for i, line in enumerate(lines) if line.strip() == old]
        assert len(hits) == 1, f"expected one line {old!r}, found {len(hits)}"
        line = lines[hits[0]]
        indent = line[: len(line) - len(line.lstrip())]
        lines[hits[0]] = "" if new == "" else f"{indent}{new}\n"
        return "".join(lines)

    return change


def drop_lines(predicate: Callable[[str], bool]) -> Edit:
    def change(text: str) -> str:
        return "".join(line for line in text.splitlines(keepends=True) if not predicate(line))

    return change
