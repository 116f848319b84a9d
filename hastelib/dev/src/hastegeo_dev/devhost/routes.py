"""Match request paths to HTTP-triggered functions the way the Functions host does.

Azure Functions routes use ASP.NET Core templates. The app's routes use literal
segments and whole-segment parameters (``jobs/{id}/cancel``); the development
host also takes an optional last parameter (``files/{name?}``) and a catch-all
(``blobs/{*path}``), which its own tests use. Anything else (constraints such as
``{id:int}``, defaults, several parameters in one segment) is refused with a
:class:`RouteError` when the host starts, so a route the host would match
differently from production never runs silently. It must choose the same
function when several could match (literals beat parameters beat catch-alls),
and tell "no such route" (404) apart from "route exists, wrong method" (405).
Everything here is pure so it is tested without a server.

Matching is case-insensitive for literals (as in ASP.NET); captured values
are percent-decoded, an encoded slash (``%2F``) stays inside one parameter.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar
from urllib.parse import unquote

T = TypeVar("T")

# Used with fullmatch only: '$' would also match before a trailing newline.
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class RouteError(ValueError):
    """A route template is malformed or uses a feature the development host does not support."""


@dataclass(frozen=True)
class RouteParameter:
    name: str
    optional: bool
    catch_all: bool


def _parse_segment(segment: str, template: str) -> str | RouteParameter:
    """One path segment: literal text, or a whole-segment ``{name}``, ``{name?}`` or ``{*name}``."""
    if "{" not in segment and "}" not in segment:
        return segment
    if not (segment.startswith("{") and segment.endswith("}")) or segment.count("{") + segment.count("}") != 2:
        raise RouteError(f"segment {segment!r} of route {template!r}: only a whole-segment parameter is supported")
    body = segment[1:-1]
    catch_all = body.startswith("*")
    optional = body.endswith("?")
    name = body.removeprefix("*").removesuffix("?")
    if not _NAME.fullmatch(name):
        raise RouteError(
            f"parameter {body!r} in route {template!r}: a name, optionally '?' or '*' (constraints and defaults"
            " are not supported)"
        )
    return RouteParameter(name, optional, catch_all)


# Lower rank wins: literal, parameter, optional, catch-all.
def _segment_rank(token: str | RouteParameter) -> int:
    if isinstance(token, str):
        return 0
    return 3 if token.catch_all else 2 if token.optional else 1


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
            if raw:
                values[param.name] = unquote(raw)
            elif not (param.optional or param.catch_all):
                return None
        return values


def compile_route(template: str, prefix: str = "") -> RouteTemplate:
    """Compile ``template`` under the route ``prefix`` (``"api"``, or ``""`` for none). Raises RouteError."""
    segments = [s for s in f"{prefix.strip('/')}/{template.strip('/')}".split("/") if s]
    parts: list[str] = []
    parameters: list[RouteParameter] = []
    precedence: list[int] = []
    for position, segment in enumerate(segments):
        token = _parse_segment(segment, template)
        precedence.append(_segment_rank(token))
        if isinstance(token, str):
            parts.append("/" + re.escape(token))
            continue
        if (token.optional or token.catch_all) and position != len(segments) - 1:
            raise RouteError(f"an optional or catch-all parameter must be the last segment in {template!r}")
        group = f"p{len(parameters)}"
        parameters.append(token)
        value = f"(?P<{group}>.*)" if token.catch_all else f"(?P<{group}>[^/]+)"
        parts.append(f"(?:/{value})?" if token.optional or token.catch_all else f"/{value}")
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
