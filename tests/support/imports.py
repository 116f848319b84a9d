"""What a module imports: loaded in a fresh interpreter (for tests that keep a process light), or read from its
source (for tests of which way imports go)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LIBRARY = REPO / "hastelib" / "src" / "hastegeo"


def modules_loaded_by(statement: str) -> set[str]:
    """The modules a fresh interpreter holds after ``statement``, minus those it holds at start-up."""

    def loaded(code: str) -> set[str]:
        script = f"import sys\n{code}\nprint('\\n'.join(sys.modules))"
        result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, check=True)
        return set(result.stdout.split())

    return loaded(statement) - loaded("")


def not_standard_library(names: set[str]) -> set[str]:
    return {name for name in names if name.split(".")[0] not in sys.stdlib_module_names}


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
