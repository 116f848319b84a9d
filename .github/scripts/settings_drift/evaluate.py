"""Evaluate a parsed Bicep expression for concrete parameter values.

A value only Azure knows (a resource property, a deployment function) is an
:class:`~settings_drift.expressions.Opaque`: known to be non-empty, nothing more.
That is all the check needs to answer "can this setting come out empty, and in
which mode".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from settings_drift.expressions import (
    AnalysisError,
    Binary,
    Call,
    If,
    Index,
    Items,
    Lit,
    Member,
    Node,
    Not,
    Opaque,
    Ref,
    Text,
    Value,
    parse_expression,
)

OPAQUE_FUNCTIONS = frozenset(
    {
        "subscription",
        "resourceGroup",
        "tenant",
        "environment",
        "deployment",
        "uniqueString",
        "guid",
        "resourceId",
        "subscriptionResourceId",
    }
)
_TEXT_FUNCTIONS: dict[str, Callable[[str], str]] = {
    "toLower": str.lower,
    "toUpper": str.upper,
    "trim": str.strip,
    "string": str,
}


def is_empty(value: Value) -> bool:
    return value is None or value == "" or value == []


def evaluate(node: Node, env: Mapping[str, Value], variables: Mapping[str, str]) -> Value:
    """The value of ``node`` when parameters have the values in ``env``; vars are expanded from ``variables``.

    Raises AnalysisError for a construct the evaluator does not model.
    """

    def value(of: Node) -> Value:
        return evaluate(of, env, variables)

    match node:
        case Lit(literal):
            return literal
        case Text(parts):
            pieces = [part if isinstance(part, str) else value(part) for part in parts]
            if any(isinstance(piece, Opaque) for piece in pieces):
                return Opaque("interpolation")
            return "".join(_text(piece) for piece in pieces)
        case Ref(name) if name in env:
            return env[name]
        case Ref(name) if name in variables:
            return value(parse_expression(variables[name]))
        case Ref(name):
            raise AnalysisError(f"unknown name {name!r}")
        case Items(items):
            return [value(item) for item in items]
        case Not(operand):
            return not _truth(value(operand))
        case If(condition, yes, no):
            return value(yes if _truth(value(condition)) else no)
        case Binary("&&", left, right):
            return _truth(value(left)) and _truth(value(right))
        case Binary("||", left, right):
            return _truth(value(left)) or _truth(value(right))
        case Binary("??", left, right):
            first = value(left)
            return value(right) if first is None else first
        case Binary("==", left, right):
            return value(left) == value(right)
        case Binary("!=", left, right):
            return value(left) != value(right)
        case Binary(op, _, _):
            raise AnalysisError(f"operator {op} is not modelled")
        case Member(target, name):
            return Opaque(f"{_opaque(value(target), f'member .{name}').label}.{name}")
        case Index(target, _):
            return Opaque(f"{_opaque(value(target), 'indexing').label}[]")
        case Call(Ref(name), args):
            return _call(name, [value(arg) for arg in args])
        case Call():
            raise AnalysisError("only plain function calls are modelled")


def _call(name: str, args: list[Value]) -> Value:
    if name == "empty" and len(args) == 1:
        return not isinstance(args[0], Opaque) and is_empty(args[0])
    if name in _TEXT_FUNCTIONS and len(args) == 1:
        return args[0] if isinstance(args[0], Opaque) else _TEXT_FUNCTIONS[name](_text(args[0]))
    if name == "join" and len(args) == 2 and isinstance(args[0], list):
        if any(isinstance(item, Opaque) for item in args[0]):
            return Opaque("join")
        return _text(args[1]).join(_text(item) for item in args[0])
    if name in OPAQUE_FUNCTIONS:
        return Opaque(f"{name}()")
    raise AnalysisError(f"function {name}() is not modelled")


def _text(value: Value) -> str:
    """A value as Bicep interpolates it (``true``, not ``True``; null as nothing)."""
    if value is None:
        return ""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _truth(value: Value) -> bool:
    if isinstance(value, bool):
        return value
    raise AnalysisError("a condition that is not a comparison, empty() or a bool parameter")


def _opaque(value: Value, what: str) -> Opaque:
    if isinstance(value, Opaque):
        return value
    raise AnalysisError(f"{what} of a non-resource value")
