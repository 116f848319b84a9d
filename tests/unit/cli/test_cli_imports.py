"""Imports go one way: no ``hastegeo.cli`` module reaches itself through another, and no module of the
library imports the development distribution (docs/adr/0013): hastegeo-dev adds its commands to ``haste``
through an entry point instead."""

from __future__ import annotations

import ast
from pathlib import Path

import hastegeo
import hastegeo.cli

PACKAGE = Path(hastegeo.cli.__file__).parent
LIBRARY = Path(hastegeo.__file__).parent


def package_of(path: Path) -> str:
    return ".".join(path.relative_to(LIBRARY.parent).with_suffix("").parts[:-1])


def imported_names(path: Path, package: str) -> set[str]:
    """Every module ``path`` (in ``package``) imports, at module level or in a function, relative ones made absolute."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], base]).strip(".")
            found |= {base} | {f"{base}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
            "import_module",
            "__import__",
        ):
            found |= {arg.value for arg in node.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)}
    return found


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
