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


# ---- `az acr build`: the Azure CLI packs the context itself, with its own reading of the same file.
#
# Read from the Azure CLI's source (src/azure-cli/azure/cli/command_modules/acr/_archive_utils.py,
# `_load_dockerignore_file`, `IgnoreRule`, `_pack_source_code`), not from Docker's documentation:
# each line (right-stripped, `#` lines and blank lines skipped) becomes one regular expression, the
# LAST line first; `!` makes an exception; the pattern is split on `/`, a `**` part becomes `.*`,
# `*` becomes `[^/]*`, `?` becomes `[^/]`, `.` is escaped, and the parts are joined with `/` and
# anchored (`^...$`). Nothing is cleaned: `dir/` keeps its slash and never matches `dir`, and a
# leading `/` never matches. The walk visits every entry, even under an ignored folder; an entry
# takes the first rule (in that order) that matches its whole relative path among the rules before
# the one that decided its parent, else its parent's verdict. `.git` and other VCS names at the
# root are always left out.

VCS_NAMES = frozenset({".git", ".gitignore", ".bzr", "bzrignore", ".hg", ".hgignore", ".svn"})


@dataclass(frozen=True)
class AcrRule:
    line: str
    ignore: bool
    regex: re.Pattern[str]


def acr_parse(text: str) -> list[AcrRule]:
    rules: list[AcrRule] = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line or line.startswith("#"):
            continue
        ignore = not line.startswith("!")
        body = line if ignore else line[1:]
        parts = body.split("/")
        pattern = "^"
        for index, part in enumerate(parts, 1):
            if part == "**":
                pattern += ".*"
            else:
                pattern += part.replace("*", "[^/]*").replace("?", "[^/]").replace(".", "\\.")
                if index < len(parts):
                    pattern += "/"
        rules.insert(0, AcrRule(line, ignore, re.compile(pattern + "$")))
    return rules


def _acr_verdict(rules: list[AcrRule], name: str, parent_ignored: bool, parent_index: int) -> tuple[bool, int]:
    if name in VCS_NAMES:
        return True, parent_index
    for index, rule in enumerate(rules):
        if index >= parent_index:
            break
        if rule.regex.match(name):
            return rule.ignore, index
    return parent_ignored, parent_index


def acr_context(root: Path, text: str) -> Iterator[str]:
    """Every file `az acr build <root>` packs: the Azure CLI's walk, pruned only where no rule can reopen."""
    rules = acr_parse(text)

    def walk(folder: Path, prefix: str, ignored: bool, decided: int) -> Iterator[str]:
        for entry in sorted(folder.iterdir()):
            name = prefix + entry.name
            verdict, index = _acr_verdict(rules, name, ignored, decided)
            if entry.is_dir() and not entry.is_symlink():
                if verdict and not any(not rule.ignore for rule in rules[:index]):
                    continue  # ignored, and no exception before its rule: nothing below can come back
                yield from walk(entry, name + "/", verdict, index)
            elif not verdict:
                yield name

    yield from walk(root, "", False, len(rules))
