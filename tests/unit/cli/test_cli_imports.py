"""The CLI's modules import in one direction: no module of ``hastegeo.cli`` reaches itself through another."""

from __future__ import annotations

import ast
from pathlib import Path

import hastegeo.cli

PACKAGE = Path(hastegeo.cli.__file__).parent


def imports_of(path: Path) -> set[str]:
    """Every ``hastegeo.cli`` module ``path`` imports, at module level or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        found |= {name.removeprefix("hastegeo.cli.") for name in names if name.startswith("hastegeo.cli.")}
    return found & {p.stem for p in PACKAGE.glob("*.py")}


def test_no_cli_module_imports_itself_through_another() -> None:
    graph = {path.stem: imports_of(path) for path in PACKAGE.glob("*.py")}
    assert "demo" in graph["main"]  # the scan sees the lazy imports too

    def reaches(start: str, target: str, seen: set[str]) -> bool:
        return any(name == target or reaches(name, target, seen | {name}) for name in graph.get(start, set()) - seen)

    assert [name for name in graph if reaches(name, name, set())] == []
    assert "main" not in graph["demo"]
