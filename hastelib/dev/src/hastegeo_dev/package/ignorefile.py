"""``.funcignore`` rules (gitignore syntax) as a pure function of a relative path.

``azd`` and Core Tools read ``.funcignore`` with gitignore semantics; the package
builder reads it the same way so that the package and what those tools ship from
the repository root are one set of files. Supported: comments, ``!`` negation,
trailing ``/`` for folders, ``/`` anchoring (a pattern with a slash is relative to
the file's folder, one without matches a name at any depth), ``*``, ``?``,
``[...]`` and ``**``. As in git, nothing inside an excluded folder comes back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    """One non-blank, non-comment line."""

    pattern: str
    negated: bool
    folder_only: bool
    anchored: bool
    regex: re.Pattern[str]

    def matches(self, path: str, is_dir: bool) -> bool:
        if self.folder_only and not is_dir:
            return False
        subject = path if self.anchored else path.rsplit("/", 1)[-1]
        return self.regex.fullmatch(subject) is not None


def _translate(glob: str) -> str:
    """A gitignore glob as a regular expression over ``/``-separated paths."""
    out: list[str] = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("/**", i) and i + 3 == len(glob):
            out.append("/.*")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "[" and (end := glob.find("]", i + 2)) != -1:
            body = glob[i + 1 : end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end + 1
        elif glob[i] == "\\" and i + 1 < len(glob):
            out.append(re.escape(glob[i + 1]))
            i += 2
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return "".join(out)


def parse(text: str) -> tuple[Rule, ...]:
    """The rules of an ignore file, in order (the last matching rule decides)."""
    rules: list[Rule] = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        if negated or line.startswith("\\"):  # "!" negates; "\!" or "\#" starts a literal name
            line = line[1:]
        folder_only = line.endswith("/")
        line = line.rstrip("/")
        anchored = "/" in line
        line = line.lstrip("/")
        if not line:
            continue
        rules.append(Rule(line, negated, folder_only, anchored, re.compile(_translate(line))))
    return tuple(rules)


def _decide(rules: tuple[Rule, ...], path: str, is_dir: bool) -> bool:
    ignored = False
    for rule in rules:
        if rule.matches(path, is_dir):
            ignored = not rule.negated
    return ignored


def is_ignored(rules: tuple[Rule, ...], path: str, is_dir: bool = False) -> bool:
    """Whether ``path`` (relative, ``/``-separated) is left out: itself or any folder above it."""
    parts = path.strip("/").split("/")
    for depth in range(1, len(parts)):
        if _decide(rules, "/".join(parts[:depth]), True):
            return True
    return _decide(rules, "/".join(parts), is_dir)


def select(rules: tuple[Rule, ...], files: list[str]) -> list[str]:
    """The files (relative paths) that the rules keep, sorted."""
    return sorted(path for path in files if not is_ignored(rules, path))
