"""Imports go one way: no ``hastegeo.cli`` module reaches itself through another, and no module of the
library imports the development distribution (docs/adr/0013): hastegeo-dev adds its commands to ``haste``
through an entry point instead."""

from __future__ import annotations

from pathlib import Path

import hastegeo
import hastegeo.cli
from tests.support.imports import LIBRARY, imported_names, package_of

PACKAGE = Path(hastegeo.cli.__file__).parent


def imports_of(path: Path) -> set[str]:
    """Every ``hastegeo.cli`` module ``path`` imports."""
    names = imported_names(path, "hastegeo.cli")
    cli = {name.removeprefix("hastegeo.cli.") for name in names if name.startswith("hastegeo.cli.")}
    return cli & {p.stem for p in PACKAGE.glob("*.py")}


def test_no_cli_module_imports_itself_through_another() -> None:
    graph = {path.stem: imports_of(path) for path in PACKAGE.glob("*.py")}
    assert "download" in graph["main"]  # the scan sees the lazy imports too

    def reaches(start: str, target: str, seen: set[str]) -> bool:
        return any(name == target or reaches(name, target, seen | {name}) for name in graph.get(start, set()) - seen)

    assert [name for name in graph if reaches(name, name, set())] == []


def test_the_library_imports_nothing_from_the_development_distribution() -> None:
    modules = sorted(LIBRARY.rglob("*.py"))
    assert len(modules) > 50  # the whole package, not a corner of it
    offenders = {
        str(path.relative_to(LIBRARY)): sorted(
            name for name in imported_names(path, package_of(path)) if name.split(".")[0] == "hastegeo_dev"
        )
        for path in modules
    }
    assert {path: names for path, names in offenders.items() if names} == {}


def test_the_scan_would_see_a_development_import(tmp_path: Path) -> None:
    """The control: each way of importing a module is found, lazy and relative ones included."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import hastegeo_dev.stack\n"
        "def later():\n    from hastegeo_dev.demo import run_demo\n"
        "    import importlib\n    importlib.import_module('hastegeo_dev.cli')\n"
        "from . import output\n",
        encoding="utf-8",
    )
    names = imported_names(sample, "hastegeo.cli")
    assert {"hastegeo_dev.stack", "hastegeo_dev.demo", "hastegeo_dev.cli", "hastegeo.cli.output"} <= names
