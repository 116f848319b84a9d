"""The build context Docker sends for a folder and its ``.dockerignore``, computed with Docker's rules.

Docker's documented semantics (docs.docker.com, "Build context", ``.dockerignore`` files; the
matcher is moby/patternmatcher): one pattern a line, ``#`` lines are comments, patterns are
cleaned like ``filepath.Clean`` and a leading ``/`` is dropped (the context root is the root).
``*`` matches any run of characters but ``/``, ``?`` one such character, ``**`` any number of
folders (zero included), ``\\`` escapes. A path is left out when the LAST pattern that matches it,
or matches one of its parent folders, is not a ``!`` pattern; a ``!`` pattern lets it back in.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Rule:
    pattern: str
    exception: bool
    regex: re.Pattern[str]


def _compile(pattern: str) -> re.Pattern[str]:
    """Translate one cleaned pattern to a regular expression, as patternmatcher does."""
    out = ""
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "*":
            if pattern[i + 1 : i + 2] == "*":
                i += 1
                if pattern[i + 1 : i + 2] == "/":
                    i += 1
                out += ".*" if i + 1 >= len(pattern) else "(.*/)?"
            else:
                out += "[^/]*"
        elif ch == "?":
            out += "[^/]"
        elif ch == "\\" and i + 1 < len(pattern):
            i += 1
            out += re.escape(pattern[i])
        elif ch == "[":
            end = pattern.find("]", i + 1)
            if end < 0:
                raise ValueError(f"unterminated character class in {pattern!r}")
            out += pattern[i : end + 1]
            i = end
        else:
            out += re.escape(ch)
        i += 1
    return re.compile(f"^{out}$")


def parse(text: str) -> list[Rule]:
    rules = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        exception = line.startswith("!")
        if exception:
            line = line[1:].strip()
        cleaned = posixpath.normpath(line).lstrip("/")
        if cleaned in ("", "."):
            continue
        rules.append(Rule(cleaned, exception, _compile(cleaned)))
    return rules


def excluded(rules: list[Rule], path: str) -> bool:
    """Whether a context-relative path (``/``-separated) is left out of the context."""
    parts = path.split("/")
    candidates = [path] + ["/".join(parts[: i + 1]) for i in range(len(parts) - 1)]
    verdict = False
    for rule in rules:
        if any(rule.regex.match(candidate) for candidate in candidates):
            verdict = not rule.exception
    return verdict


def context(root: Path, rules: list[Rule]) -> Iterator[str]:
    """Every file of ``root`` Docker would send, walking past folders no ``!`` rule can reopen."""
    reopen = [rule.pattern for rule in rules if rule.exception]
    for folder, dirs, files in os.walk(root):
        relative = Path(folder).relative_to(root).as_posix()
        prefix = "" if relative == "." else relative + "/"
        kept = []
        for name in dirs:
            path = prefix + name
            reopened = any(p == path or p.startswith(path + "/") or any(c in p for c in "*?[") for p in reopen)
            if excluded(rules, path) and not reopened:
                continue
            kept.append(name)
        dirs[:] = kept
        for name in files:
            if not excluded(rules, prefix + name):
                yield prefix + name
