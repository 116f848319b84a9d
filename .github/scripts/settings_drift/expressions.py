"""Bicep expressions as a small typed tree: the grammar appSettings.bicep keeps to, and nothing more.

Identifiers, literals, strings with ``${}`` interpolation, ``==``/``!=``, ``&&``/``||``,
``??``, ``!``, ternaries, member access, indexing and plain function calls. Anything
else raises :class:`AnalysisError`, which the check reports: a value outside this
grammar is too clever for people to review as well.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass


class AnalysisError(Exception):
    """An expression uses something the evaluator does not model."""


@dataclass(frozen=True)
class Opaque:
    """A value known only to be non-empty (a resource property, a parameter's unknown text)."""

    label: str


Value = str | int | bool | None | Opaque | list["Value"]


@dataclass(frozen=True)
class Lit:
    value: str | int | bool | None


@dataclass(frozen=True)
class Text:
    """A string literal: plain text pieces and interpolated expressions, in order."""

    parts: tuple[str | Node, ...]


@dataclass(frozen=True)
class Ref:
    name: str


@dataclass(frozen=True)
class Items:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Not:
    operand: Node


@dataclass(frozen=True)
class If:
    condition: Node
    yes: Node
    no: Node


@dataclass(frozen=True)
class Binary:
    op: str
    left: Node
    right: Node


@dataclass(frozen=True)
class Member:
    target: Node
    name: str


@dataclass(frozen=True)
class Index:
    target: Node
    index: Node


@dataclass(frozen=True)
class Call:
    function: Node
    args: tuple[Node, ...]


Node = Lit | Text | Ref | Items | Not | If | Binary | Member | Index | Call

_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_]\w*)|(==|!=|&&|\|\||\?\?|<=|>=|[!?:.(),\[\]<>])|('))")
_LEVELS = (("??",), ("||",), ("&&",), ("==", "!="), ("<", ">", "<=", ">="))


@dataclass(frozen=True)
class _Token:
    kind: str  # "num", "name", "op" or "str"
    text: str = ""
    number: int = 0
    parts: tuple[str | Node, ...] = ()


def parse_expression(source: str) -> Node:
    """Raises AnalysisError for anything outside the grammar."""
    parser = _Parser(_tokenize(source))
    node = parser.expression()
    if parser.pos != len(parser.tokens):
        raise AnalysisError(f"unexpected {parser.tokens[parser.pos].text!r}")
    return node


def free_names(node: Node, variables: Mapping[str, str], seen: frozenset[str] = frozenset()) -> set[str]:
    """The parameters ``node`` reads, through the file's vars (function names are not parameters)."""
    match node:
        case Ref(name) if name in variables:
            return set() if name in seen else free_names(parse_expression(variables[name]), variables, seen | {name})
        case Ref(name):
            return {name}
        case Call(Ref(), args):
            return set().union(*(free_names(arg, variables, seen) for arg in args))
        case _:
            return set().union(*(free_names(child, variables, seen) for child in _children(node)))


def _children(node: Node) -> tuple[Node, ...]:
    match node:
        case Lit() | Ref():
            return ()
        case Text(parts):
            return tuple(part for part in parts if not isinstance(part, str))
        case Items(items):
            return items
        case Not(operand):
            return (operand,)
        case If(condition, yes, no):
            return (condition, yes, no)
        case Binary(_, left, right):
            return (left, right)
        case Member(target, _):
            return (target,)
        case Index(target, index):
            return (target, index)
        case Call(function, args):
            return (function, *args)


def _tokenize(source: str) -> list[_Token]:
    tokens: list[_Token] = []
    i = 0
    while i < len(source):
        if source[i].isspace():
            i += 1
            continue
        match = _TOKEN.match(source, i)
        if not match:
            raise AnalysisError(f"unexpected {source[i:]!r}")
        number, name, op, quote = match.groups()
        if quote:
            parts, i = _read_string(source, match.end())
            tokens.append(_Token("str", parts=parts))
            continue
        if number:
            tokens.append(_Token("num", number, int(number)))
        elif name:
            tokens.append(_Token("name", name))
        else:
            tokens.append(_Token("op", op))
        i = match.end()
    return tokens


def _read_string(source: str, i: int) -> tuple[tuple[str | Node, ...], int]:
    """Read a quoted string from after its quote; interpolations come back as parsed expressions."""
    parts: list[str | Node] = []
    text = ""
    while i < len(source):
        char = source[i]
        if char == "\\":
            text += source[i + 1 : i + 2]
            i += 2
        elif char == "'":
            parts.append(text)
            return tuple(parts), i + 1
        elif source.startswith("${", i):
            parts.append(text)
            text = ""
            depth, j, quoted = 1, i + 2, False
            while j < len(source) and depth:
                if source[j] == "'" and source[j - 1] != "\\":
                    quoted = not quoted
                elif not quoted and source[j] == "{":
                    depth += 1
                elif not quoted and source[j] == "}":
                    depth -= 1
                j += 1
            if depth:
                raise AnalysisError("unterminated interpolation")
            parts.append(parse_expression(source[i + 2 : j - 1]))
            i = j
        else:
            text += char
            i += 1
    raise AnalysisError("unterminated string")


class _Parser:
    """Recursive descent, one method per precedence level."""

    def __init__(self, tokens: list[_Token]) -> None:
        self.tokens = tokens
        self.pos = 0

    def peek(self, value: str | None = None) -> bool:
        if self.pos >= len(self.tokens):
            return False
        token = self.tokens[self.pos]
        return value is None or (token.kind in ("op", "name") and token.text == value)

    def take(self, value: str | None = None) -> _Token:
        if not self.peek(value):
            raise AnalysisError(f"expected {value or 'a value'}")
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def expression(self) -> Node:
        condition = self.binary(0)
        if self.peek("?"):
            self.take("?")
            yes = self.expression()
            self.take(":")
            return If(condition, yes, self.expression())
        return condition

    def binary(self, level: int) -> Node:
        if level == len(_LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while any(self.peek(op) for op in _LEVELS[level]):
            op = self.take().text
            left = Binary(op, left, self.binary(level + 1))
        return left

    def unary(self) -> Node:
        if self.peek("!"):
            self.take("!")
            return Not(self.unary())
        node = self.primary()
        while True:
            if self.peek("."):
                self.take(".")
                node = Member(node, self.take().text)
            elif self.peek("("):
                node = Call(node, self.sequence("(", ")", commas=True))
            elif self.peek("["):
                self.take("[")
                node = Index(node, self.expression())
                self.take("]")
            else:
                return node

    def sequence(self, open_: str, close: str, *, commas: bool) -> tuple[Node, ...]:
        """Expressions between ``open_`` and ``close``: comma-separated, or with optional commas (arrays)."""
        self.take(open_)
        items = []
        while not self.peek(close):
            items.append(self.expression())
            if self.peek(",") or (commas and not self.peek(close)):
                self.take(",")
        self.take(close)
        return tuple(items)

    def primary(self) -> Node:
        if self.peek("["):
            return Items(self.sequence("[", "]", commas=False))
        token = self.take()
        if token.kind == "str":
            return Text(token.parts)
        if token.kind == "num":
            return Lit(token.number)
        if token.kind == "name":
            if token.text in ("true", "false"):
                return Lit(token.text == "true")
            return Lit(None) if token.text == "null" else Ref(token.text)
        if token.text == "(":
            node = self.expression()
            self.take(")")
            return node
        raise AnalysisError(f"unexpected {token.text!r}")
