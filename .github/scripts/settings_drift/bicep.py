"""Read the parts of Bicep files the check needs, line by line (no Bicep compiler runs here).

appSettings.bicep keeps to a reviewable layout: params with their ``@allowed`` and
``@minLength`` decorators, one-line vars, and object vars written one
``NAME: expression`` per line. main.bicepparam reads every parameter with
``readEnvironmentVariable('NAME', 'default')``. A file that strays from this
raises :class:`~settings_drift.problems.DriftSourceError`, reported as a problem.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from settings_drift.problems import DriftSourceError

Literal = str | bool | int


@dataclass(frozen=True)
class BicepParam:
    name: str
    type: str
    default: str | None  # source text of the default expression
    allowed: tuple[Literal, ...] | None
    min_length: int | None
    line: int


@dataclass
class BicepFile:
    path: str
    params: dict[str, BicepParam] = field(default_factory=dict)
    variables: dict[str, str] = field(default_factory=dict)
    objects: dict[str, dict[str, tuple[str, int]]] = field(default_factory=dict)  # var -> NAME -> (expression, line)


@dataclass(frozen=True)
class EnvParam:
    param: str
    variable: str
    default: str | None
    line: int


# Whole-line patterns, used with fullmatch ('$' would also match before a trailing newline).
_PARAM = re.compile(r"param\s+(\w+)\s+([\w\[\]]+)(?:\s*=\s*(.+))?")
_VAR = re.compile(r"var\s+(\w+)\s*=\s*(.+)")
_OBJECT_START = re.compile(r"var\s+(\w+)\s*=\s*\{\s*")
_ENTRY = re.compile(r"(?:'([^']+)'|([A-Za-z_]\w*))\s*:\s*(.+)")
_READ_ENV = re.compile(
    r"param\s+(\w+)\s*=\s*readEnvironmentVariable\(\s*'([^']+)'\s*(?:,\s*'((?:[^'\\]|\\.)*)'\s*)?\)\s*"
)


def strip_comment(line: str) -> str:
    """Drop a ``//`` comment that is not inside a string literal."""
    quoted = False
    i = 0
    while i < len(line):
        char = line[i]
        if char == "\\" and quoted:
            i += 2
            continue
        if char == "'":
            quoted = not quoted
        elif not quoted and line.startswith("//", i):
            return line[:i].rstrip()
        i += 1
    return line.rstrip()


def parse_bicep(text: str, path: str) -> BicepFile:
    """Params (with ``@allowed``/``@minLength``), one-line vars and one-entry-per-line object vars."""
    result = BicepFile(path)
    decorators: list[str] = []
    current_object: str | None = None
    in_block_comment = False
    for number, raw in enumerate(text.splitlines(), start=1):
        if in_block_comment:
            in_block_comment = "*/" not in raw
            continue
        line = strip_comment(raw).strip()
        if line.startswith("/*"):
            in_block_comment = "*/" not in line
            continue
        if not line:
            continue
        if current_object is not None:
            if line == "}":
                current_object = None
            else:
                _add_entry(result.objects[current_object], line, f"{path}:{number}", current_object, number)
            continue
        if line.startswith("@") or (decorators and not line.startswith(("param ", "var ", "output ", "resource "))):
            decorators.append(line)
            continue
        match = _PARAM.fullmatch(line)
        if match:
            result.params[match.group(1)] = _param(match, " ".join(decorators), number)
            decorators = []
            continue
        decorators = []
        start = _OBJECT_START.fullmatch(line)
        if start:
            current_object = start.group(1)
            result.objects[current_object] = {}
            continue
        match = _VAR.fullmatch(line)
        if match:
            result.variables[match.group(1)] = match.group(2).strip()
    return result


def parse_bicepparam(text: str, path: str) -> dict[str, EnvParam]:
    """``param p = readEnvironmentVariable('VAR', 'default')`` lines, keyed by variable name."""
    found: dict[str, EnvParam] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = strip_comment(raw).strip()
        if not line.startswith("param "):
            continue
        match = _READ_ENV.fullmatch(line)
        if not match:
            raise DriftSourceError(
                f"{path}:{number}: every parameter must come from readEnvironmentVariable('NAME', 'default')"
            )
        param, variable, default = match.groups()
        if variable in found:
            raise DriftSourceError(f"{path}:{number}: {variable} is read twice")
        found[variable] = EnvParam(param, variable, default, number)
    return found


def literal_default(source: str | None) -> str | None:
    """A param default written as a literal (``'x'``, ``true``, ``42``) in its text form; None otherwise."""
    if source is None:
        return None
    match = re.fullmatch(r"'((?:[^'\\]|\\.)*)'", source.strip())
    if match:
        return match.group(1).replace("\\'", "'")
    if source.strip() in ("true", "false") or source.strip().lstrip("-").isdigit():
        return source.strip()
    return None


def _add_entry(entries: dict[str, tuple[str, int]], line: str, where: str, obj: str, number: int) -> None:
    entry = _ENTRY.fullmatch(line)
    if not entry:
        raise DriftSourceError(f"{where}: expected one 'NAME: expression' per line, got {line!r}")
    key = entry.group(1) or entry.group(2)
    if key in entries:
        raise DriftSourceError(f"{where}: {key} is listed twice in {obj}")
    entries[key] = (entry.group(3).strip(), number)


def _param(match: re.Match[str], decorators: str, number: int) -> BicepParam:
    allowed_match = re.search(r"@allowed\(\[(.*?)\]\)", decorators)
    allowed = None
    if allowed_match:
        items = re.findall(r"'(?:[^'\\]|\\.)*'|\btrue\b|\bfalse\b|-?\d+", allowed_match.group(1))
        allowed = tuple(_literal(item) for item in items)
    min_match = re.search(r"@minLength\((\d+)\)", decorators)
    return BicepParam(
        name=match.group(1),
        type=match.group(2),
        default=match.group(3).strip() if match.group(3) else None,
        allowed=allowed,
        min_length=int(min_match.group(1)) if min_match else None,
        line=number,
    )


def _literal(token: str) -> Literal:
    if token.startswith("'"):
        return token[1:-1].replace("\\'", "'")
    if token in ("true", "false"):
        return token == "true"  # noqa: S105 - a Bicep boolean literal
    return int(token)
