"""Every pattern that must match a whole value does so: fullmatch, never a ``$`` that a trailing newline passes.

Python's ``$`` also matches just before a final ``"\\n"``, so ``re.match(r"^[a-z]+$", "x\\n")`` succeeds:
a project id, a blob name or a route would carry a newline through. A scan of the source tree (AST, not
text) keeps it so: no regex literal given to the ``re`` module or to ``.match``/``.search`` ends in ``$``,
no ``^...$`` constant exists unless it is only a pydantic ``pattern=`` / JSON-schema ``"pattern"`` (Rust
and ECMA-262 regexes, where ``$`` is the end of the text; ``test_params`` proves it), and no regex is
assembled as ``... + "$"``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from hastegeo.auth import PROJECT_ID
from hastegeo.models.ids import ID
from hastegeo.models.paths import check_relative_path
from hastegeo_dev.devhost.routes import compile_route

ROOT = Path(__file__).resolve().parents[3]
SCANNED = [
    ROOT / "hastelib" / "src",
    ROOT / "hastelib" / "dev" / "src",
    ROOT / "api",
    ROOT / "function_app.py",
    ROOT / ".github" / "scripts",
]
RE_FUNCTIONS = {"compile", "match", "search", "fullmatch", "sub", "subn", "split", "findall", "finditer"}


def sources() -> Iterator[Path]:
    for root in SCANNED:
        yield from [root] if root.is_file() else sorted(root.rglob("*.py"))


def ends_with_dollar(text: str) -> bool:
    """A regex ending in an unescaped ``$``."""
    return text.endswith("$") and not text.endswith("\\$")


def _string(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


class Scan(ast.NodeVisitor):
    def __init__(self, path: Path, tree: ast.Module) -> None:
        self.path = path
        self.problems: list[str] = []
        # Module-level names bound to a string literal, and the literal.
        self.constants: dict[str, str] = {}
        for node in tree.body:
            if isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                value = _string(node.value)
                for target in targets:
                    if isinstance(target, ast.Name) and value is not None:
                        self.constants[target.id] = value
        # Names used somewhere other than as a pydantic/JSON-schema pattern.
        self.used_as_regex: set[str] = set()
        self.pattern_only_literals: set[int] = set()

    def report(self, node: ast.AST, what: str) -> None:
        self.problems.append(f"{self.path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}: {what}")

    def _pattern_text(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Name):
            return self.constants.get(node.id)
        return _string(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        is_re = isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "re"
        if is_re and isinstance(func, ast.Attribute) and func.attr in RE_FUNCTIONS and node.args:
            text = self._pattern_text(node.args[0])
            if text is not None and ends_with_dollar(text):
                self.report(node, f"re.{func.attr} with a pattern ending in '$': use fullmatch and drop the anchors")
            if isinstance(node.args[0], ast.Name):
                self.used_as_regex.add(node.args[0].id)
        elif isinstance(func, ast.Attribute) and func.attr in ("match", "search") and node.args:
            text = _string(func.value)
            if text is not None and ends_with_dollar(text):
                self.report(node, f".{func.attr} on a pattern ending in '$'")
        for keyword in node.keywords:
            if keyword.arg == "pattern":
                self.pattern_only_literals.add(id(keyword.value))
        self.generic_visit(node)

    def visit_Dict(self, node: ast.Dict) -> None:
        for key, value in zip(node.keys, node.values, strict=True):
            if _string(key) == "pattern":
                self.pattern_only_literals.add(id(value))
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        right = _string(node.right)
        if isinstance(node.op, ast.Add) and right is not None and ends_with_dollar(right):
            self.report(node, "a regex assembled with + '$': use fullmatch instead")
        self.generic_visit(node)

    def finish(self, tree: ast.Module) -> None:
        """``^...$`` literals and constants are allowed only where they are a pydantic/JSON-schema pattern."""
        allowed_names = set()
        for node in ast.walk(tree):
            if id(node) in self.pattern_only_literals and isinstance(node, ast.Name):
                allowed_names.add(node.id)
        loads = [node for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)]
        other_uses = {node.id for node in loads if id(node) not in self.pattern_only_literals}
        for node in ast.walk(tree):
            text = _string(node)
            if text is None or not text.startswith("^") or not ends_with_dollar(text) or len(text) < 3:
                continue
            if id(node) in self.pattern_only_literals:
                continue
            names = [name for name, value in self.constants.items() if value is text or value == text]
            if names and all(name in allowed_names and name not in other_uses for name in names):
                continue
            self.report(node, f"regex constant {text[:40]!r} ends in '$' outside a pydantic/JSON-schema pattern")


def scan(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    visitor = Scan(path, tree)
    visitor.visit(tree)
    visitor.finish(tree)
    return visitor.problems


def test_no_pattern_can_end_before_a_trailing_newline() -> None:
    files = list(sources())
    assert len(files) > 50
    problems = [problem for path in files for problem in scan(path)]
    assert problems == []


@pytest.mark.parametrize(
    "code",
    [
        'import re\nre.match(r"^[a-z]+$", value)\n',
        'import re\n_ID = re.compile(r"^[a-z]+$")\n',
        'import re\n_ID = r"^[a-z]+$"\nre.search(_ID, value)\n',
        '"^[a-z]+$".match\n_X = "^[a-z]+$"\n',
        'import re\nregex = "^" + body + "$"\nre.compile(regex)\n',
        '_ID = r"^[a-z]+$"\nif _ID: pass\n',
    ],
)
def test_the_scan_catches_each_form(code: str) -> None:
    """The scan is not vacuous: each way of writing a '$'-terminated regex is reported."""
    path = ROOT / "tests" / "unit" / "core" / "_scan_sample.py"
    tree = ast.parse(code)
    visitor = Scan(path, tree)
    visitor.visit(tree)
    visitor.finish(tree)
    assert visitor.problems


def test_the_scan_allows_pydantic_and_json_schema_patterns() -> None:
    code = '_ID = r"^[a-z]+$"\nclass M:\n    x: str = Field(pattern=_ID)\nS = {"pattern": "^[a-z]+$"}\n'
    tree = ast.parse(code)
    visitor = Scan(ROOT / "x.py", tree)
    visitor.visit(tree)
    visitor.finish(tree)
    assert visitor.problems == []


@pytest.mark.parametrize(
    ("accepts", "value"),
    [
        (lambda v: PROJECT_ID.fullmatch(v) is not None, "p1"),
        (lambda v: ID.fullmatch(v) is not None, "j1"),
        (lambda v: compile_route("health").match(v) is not None, "/health"),
    ],
)
def test_fixed_patterns_refuse_a_trailing_newline(accepts: object, value: str) -> None:
    assert callable(accepts)
    assert accepts(value)
    assert not accepts(value + "\n")


def test_relative_paths_refuse_a_trailing_newline() -> None:
    assert check_relative_path("p1/x") == "p1/x"
    with pytest.raises(ValueError, match="relative path"):
        check_relative_path("p1/x\n")
    assert re.fullmatch(r"[a-z]+", "x\n") is None
