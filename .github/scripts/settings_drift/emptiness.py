"""Emptiness: no app setting can be emitted empty while the code needs a value in the mode that emits it.

Each expression of appSettings.bicep is *evaluated* for every combination of the
values its parameters can take: its ``@allowed`` values; otherwise ``''`` and a
non-empty value, unless it has ``@minLength(1)``, which ARM enforces. Evaluating,
not pattern-matching, is what tells the seed bug
``amlMode == 'Disabled' ? '' : amlIdentityMode`` from the correct
``amlEnabled ? amlSubscriptionId : ''``: they differ only in the mode in which
the empty value appears.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from pydantic import ValidationError

from settings_drift.bicep import BicepFile, BicepParam
from settings_drift.code import CodeSetting, not_deployed_reason
from settings_drift.evaluate import evaluate, is_empty
from settings_drift.expressions import AnalysisError, Opaque, Value, free_names, parse_expression
from settings_drift.problems import APP_SETTINGS, Problem
from settings_drift.sources import Sources


def check_values(src: Sources) -> list[Problem]:
    problems: list[Problem] = []
    for name in sorted(src.code):
        entry = src.infra_entry(name)
        if entry is None or not_deployed_reason(name):
            continue
        _, expression, line = entry
        where = f"{APP_SETTINGS}:{line}"
        try:
            problems.extend(Problem(where, name, message) for message in _findings(src, src.code[name], expression))
        except AnalysisError as exc:
            message = (
                f"cannot analyse {expression!r}: {exc}; keep each value to parameters, "
                "literals, comparisons, ternaries and empty()"
            )
            problems.append(Problem(where, name, message))
    return problems


def representatives(param: BicepParam) -> list[Value]:
    """The values worth trying for a parameter: its allowed set, or empty and non-empty."""
    if param.allowed is not None:
        return list(param.allowed)
    if param.type == "bool":
        return [True, False]
    if param.type == "int":
        return [0, 1]
    if param.min_length and param.min_length > 0:
        return [Opaque(param.name)]
    return ["", Opaque(param.name)]


def outcomes(bicep: BicepFile, expressions: Iterable[str], limit: int = 4096) -> list[tuple[Value, ...]]:
    """Evaluate expressions together for every combination of the parameters they read."""
    parsed = [parse_expression(source) for source in expressions]
    names = sorted(set().union(*(free_names(node, bicep.variables) for node in parsed)))
    unknown = [name for name in names if name not in bicep.params]
    if unknown:
        raise AnalysisError(f"reads {', '.join(unknown)}, which is neither a parameter nor a var of this file")
    choices = [representatives(bicep.params[name]) for name in names]
    total = 1
    for values in choices:
        total *= len(values)
    if total > limit:
        raise AnalysisError(f"depends on too many parameter combinations ({total})")
    return [
        tuple(evaluate(node, dict(zip(names, combo, strict=True)), bicep.variables) for node in parsed)
        for combo in itertools.product(*choices)
    ]


def _findings(src: Sources, setting: CodeSetting, expression: str) -> list[str]:
    """What is wrong with one setting's expression (empty list: nothing). Raises AnalysisError."""
    bicep = src.app_settings
    found: list[str] = []
    emitted = [value for (value,) in outcomes(bicep, [expression])]  # every value is analysed
    if setting.always_required and any(is_empty(value) for value in emitted):
        found.append(
            "can be emitted empty, but the code needs a value in every mode "
            f"(default {setting.default!r}); an empty value hides the operator's choice"
        )
    for condition in setting.required_when:
        modes = list(condition)
        mode_entries = [src.infra_entry(mode) for mode in modes]
        if any(entry is None for entry in mode_entries):
            continue  # reported by the presence check
        expressions = [entry[1] for entry in mode_entries if entry is not None]
        for values in outcomes(bicep, [*expressions, expression]):
            *mode_values, value = values
            pairs = list(zip(modes, mode_values, strict=True))
            if is_empty(value) and all(str(v) in condition[m] for m, v in pairs):
                when = " and ".join(f"{m}={v}" for m, v in pairs)
                found.append(f"can be emitted empty when {when}, but the code requires it then")
                break
    # Values infra allows for a choice setting must be valid choices for the code.
    param = bicep.params.get(expression.strip())
    for allowed in (param.allowed or ()) if param is not None else ():
        try:
            setting.normalise(str(allowed))
        except ValidationError:
            found.append(f"infra allows {allowed!r}, which the code rejects")
    return found
