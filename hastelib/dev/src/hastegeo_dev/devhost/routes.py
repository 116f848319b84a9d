"""Match request paths to HTTP-triggered functions the way the Functions host does.

Azure Functions routes use ASP.NET Core templates: ``jobs/{id}``,
``jobs/{id:guid}``, ``files/{name?}``, ``blobs/{*path}``, ``{id:regex(^a\\d+$)}``.
The development host must accept the same templates as production, choose
the same function when several could match (literals beat parameters beat
catch-alls), and tell "no such route" (404) apart from "route exists, wrong
method" (405). Everything here is pure so it is tested without a server.

Matching is case-insensitive for literals (as in ASP.NET); captured values
are percent-decoded, an encoded slash (``%2F``) stays inside one parameter.
"""

from __future__ import annotations

import functools
import math
import re
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, TypeVar
from urllib.parse import unquote

T = TypeVar("T")

# Used with fullmatch only: '$' would also match before a trailing newline.
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ARG_CONSTRAINT = re.compile(r"(?P<name>[a-z]+)\((?P<args>.*)\)", re.DOTALL)
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


class RouteError(ValueError):
    """A route template is malformed or uses an unknown constraint."""


def _is_int(value: str, bounds: tuple[int, int]) -> bool:
    if not re.fullmatch(r"-?\d+", value):
        return False
    return bounds[0] <= int(value) <= bounds[1]


def _is_float(value: str) -> bool:
    try:
        return math.isfinite(float(value))
    except ValueError:
        return False


def _is_guid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def _is_datetime(value: str) -> bool:
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


_SIMPLE_CONSTRAINTS: dict[str, Callable[[str], bool]] = {
    "int": lambda v: _is_int(v, _INT32),
    "long": lambda v: _is_int(v, _INT64),
    "bool": lambda v: v.lower() in ("true", "false"),
    "guid": _is_guid,
    "alpha": lambda v: bool(re.fullmatch(r"[A-Za-z]+", v)),
    "decimal": _is_float,
    "double": _is_float,
    "float": _is_float,
    "datetime": _is_datetime,
    "required": lambda v: v != "",
}


def _int_args(name: str, args: str, count: tuple[int, ...]) -> list[int]:
    parts = [part.strip() for part in args.split(",")]
    if len(parts) not in count or not all(re.fullmatch(r"-?\d+", part) for part in parts):
        raise RouteError(f"constraint {name}({args}) expects {' or '.join(map(str, count))} integer argument(s)")
    return [int(part) for part in parts]


@functools.lru_cache(maxsize=256)
def compile_constraint(text: str) -> Callable[[str], bool]:
    """Turn one constraint (``int``, ``minlength(3)``, ``regex(^a+$)`` ...) into a predicate on the value."""
    if text in _SIMPLE_CONSTRAINTS:
        return _SIMPLE_CONSTRAINTS[text]
    match = _ARG_CONSTRAINT.fullmatch(text)
    if match is None:
        raise RouteError(f"unknown route constraint {text!r}")
    name, args = match["name"], match["args"]
    if name == "regex":
        try:
            expression = re.compile(args, re.IGNORECASE)
        except re.error as exc:
            raise RouteError(f"invalid regex constraint {args!r}: {exc}") from exc
        return lambda v: expression.search(v) is not None
    if name in ("minlength", "maxlength"):
        (limit,) = _int_args(name, args, (1,))
        return (lambda v: len(v) >= limit) if name == "minlength" else (lambda v: len(v) <= limit)
    if name == "length":
        bounds = _int_args(name, args, (1, 2))
        low, high = (bounds[0], bounds[0]) if len(bounds) == 1 else (bounds[0], bounds[1])
        return lambda v: low <= len(v) <= high
    if name in ("min", "max", "range"):
        values = _int_args(name, args, (2,) if name == "range" else (1,))
        low = values[0] if name != "max" else _INT64[0]
        high = values[-1] if name != "min" else _INT64[1]
        return lambda v: _is_int(v, _INT64) and low <= int(v) <= high
    raise RouteError(f"unknown route constraint {text!r}")


@dataclass(frozen=True)
class RouteParameter:
    name: str
    optional: bool
    catch_all: bool
    default: str | None
    constraints: tuple[str, ...]


def _split_constraints(text: str) -> list[str]:
    """Split ``int:min(1):regex(a:b)`` on colons outside parentheses."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == ":" and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        depth += (char == "(") - (char == ")")
        current.append(char)
    parts.append("".join(current))
    return parts


def _parse_parameter(body: str, template: str) -> RouteParameter:
    catch_all = body.startswith("*")
    body = body.lstrip("*")
    head, *constraints = _split_constraints(body)
    default = None
    if "=" in head:
        head, default = head.split("=", 1)
    optional = head.endswith("?")
    name = head.rstrip("?")
    if constraints and constraints[-1].endswith("?"):
        optional = True
        constraints[-1] = constraints[-1][:-1]
    if not _NAME.fullmatch(name):
        raise RouteError(f"invalid parameter name {name!r} in route {template!r}")
    for constraint in constraints:
        compile_constraint(constraint)
    return RouteParameter(name, optional or default is not None, catch_all, default, tuple(constraints))


def _tokenize_segment(segment: str, template: str) -> list[str | RouteParameter]:
    """Split one path segment into literal text and parameters (``{{``/``}}`` are literal braces)."""
    tokens: list[str | RouteParameter] = []
    literal: list[str] = []
    i = 0
    while i < len(segment):
        char = segment[i]
        if segment.startswith("{{", i) or segment.startswith("}}", i):
            literal.append(char)
            i += 2
            continue
        if char == "}":
            raise RouteError(f"unbalanced '}}' in route {template!r}")
        if char != "{":
            literal.append(char)
            i += 1
            continue
        depth, j, body = 0, i + 1, []
        while j < len(segment):
            c = segment[j]
            if c == "}" and depth == 0:
                if segment.startswith("}}", j):
                    body.append("}")
                    j += 2
                    continue
                break
            depth += (c == "(") - (c == ")")
            body.append(c)
            j += 1
        else:
            raise RouteError(f"unclosed '{{' in route {template!r}")
        if literal:
            tokens.append("".join(literal))
            literal = []
        tokens.append(_parse_parameter("".join(body), template))
        i = j + 1
    if literal:
        tokens.append("".join(literal))
    return tokens


# Lower rank wins: literal, complex (literal + parameter), constrained, plain, optional, catch-all.
def _segment_rank(tokens: list[str | RouteParameter]) -> int:
    if all(isinstance(token, str) for token in tokens):
        return 0
    if len(tokens) > 1:
        return 1
    param = tokens[0]
    assert isinstance(param, RouteParameter)
    if param.catch_all:
        return 5
    if param.optional:
        return 4
    return 2 if param.constraints else 3


@dataclass(frozen=True)
class RouteTemplate:
    """A compiled route: ``match(path)`` gives the decoded route parameters or None."""

    template: str
    pattern: re.Pattern[str]
    parameters: tuple[RouteParameter, ...]
    precedence: tuple[int, ...]

    def match(self, path: str) -> dict[str, str] | None:
        """Match a raw (percent-encoded) request path without query string."""
        if len(path) > 1 and path.endswith("/"):
            path = path[:-1]
        found = self.pattern.fullmatch(path)
        if found is None:
            return None
        values: dict[str, str] = {}
        for index, param in enumerate(self.parameters):
            raw = found.group(f"p{index}")
            if raw is None or raw == "":
                if param.default is not None:
                    values[param.name] = param.default
                elif not (param.optional or param.catch_all):
                    return None
                continue
            value = unquote(raw)
            if not all(compile_constraint(c)(value) for c in param.constraints):
                return None
            values[param.name] = value
        return values


def compile_route(template: str, prefix: str = "") -> RouteTemplate:
    """Compile ``template`` under the route ``prefix`` (``"api"``, or ``""`` for none). Raises RouteError."""
    segments = [s for s in f"{prefix.strip('/')}/{template.strip('/')}".split("/") if s]
    parts: list[str] = []
    parameters: list[RouteParameter] = []
    precedence: list[int] = []
    for position, segment in enumerate(segments):
        tokens = _tokenize_segment(segment, template)
        precedence.append(_segment_rank(tokens))
        pieces: list[str] = []
        for token in tokens:
            if isinstance(token, str):
                pieces.append(re.escape(token))
                continue
            if token.catch_all and (position != len(segments) - 1 or len(tokens) > 1):
                raise RouteError(f"a catch-all parameter must be the whole last segment in {template!r}")
            group = f"p{len(parameters)}"
            parameters.append(token)
            pieces.append(f"(?P<{group}>.*)" if token.catch_all else f"(?P<{group}>[^/]+?)")
        if len(tokens) == 1 and isinstance(tokens[0], RouteParameter) and (tokens[0].optional or tokens[0].catch_all):
            parts.append(f"(?:/{pieces[0]})?")
        else:
            parts.append("/" + "".join(pieces))
    if len({p.name.lower() for p in parameters}) != len(parameters):
        raise RouteError(f"duplicate parameter name in route {template!r}")
    regex = "".join(parts) or "/"  # matched with fullmatch, so "/api/jobs\n" is not "/api/jobs"
    return RouteTemplate(template, re.compile(regex, re.IGNORECASE | re.DOTALL), tuple(parameters), tuple(precedence))


@dataclass(frozen=True)
class RouteMatch(Generic[T]):
    target: T
    route_params: dict[str, str]


@dataclass(frozen=True)
class MethodNotAllowed:
    allowed: frozenset[str]


@dataclass(frozen=True)
class _Entry(Generic[T]):
    route: RouteTemplate
    methods: frozenset[str] | None  # None: every method
    target: T


class RouteTable(Generic[T]):
    """Routes in precedence order; ``resolve`` gives a match, MethodNotAllowed, or None (no route)."""

    def __init__(self, prefix: str = "api") -> None:
        self._prefix = prefix
        self._entries: list[_Entry[T]] = []

    def add(self, template: str, methods: Iterable[str] | None, target: T) -> None:
        route = compile_route(template, self._prefix)
        upper = frozenset(m.upper() for m in methods) if methods else None
        self._entries.append(_Entry(route, upper, target))
        self._entries.sort(key=lambda e: (e.route.precedence, -len(e.route.precedence)))

    def resolve(self, method: str, path: str) -> RouteMatch[T] | MethodNotAllowed | None:
        allowed: set[str] = set()
        for entry in self._entries:
            params = entry.route.match(path)
            if params is None:
                continue
            if entry.methods is None or method.upper() in entry.methods:
                return RouteMatch(entry.target, params)
            allowed |= entry.methods
        return MethodNotAllowed(frozenset(allowed)) if allowed else None
