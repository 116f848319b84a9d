"""The settings the code declares, read from ``hastegeo.settings.load.sections()`` and never listed here.

Those are the app's own sections (``hastegeo.settings.app``) and the one each registered backend's
descriptor declares, so an installed backend's variables are checked and documented too.

Each field's alias is its environment variable; its description and default
document it. Which mode needs a value comes from an explicit
``json_schema_extra={"required_when": {...}}`` marker, plus what the section's
validators reject when probed with one empty-by-default field left out.
"""

from __future__ import annotations

import enum
import itertools
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

# Settings the code reads that are NOT deployment settings. Keep this short: each
# entry needs a reason a reviewer accepts. Everything else must be emitted by infra.
NOT_DEPLOYED: dict[str, str] = {
    "AzureWebJobsStorage": "a connection string for development and Azurite; production sets "
    "AzureWebJobsStorage__accountName and reaches storage with the app's identity",
    "BATCH_ACCOUNT_NAME": "read only in shared_key mode, which only the Batch test double uses",
    "BATCH_ACCOUNT_KEY": "shared-key auth exists only for the Batch test double; "
    "the deployed Batch account accepts Entra tokens only",
}
NOT_DEPLOYED_PREFIXES: dict[str, str] = {
    "HASTE_LOCAL_": "the local backend runs workloads as processes on a developer machine",
}
# Settings under an excluded prefix that are deployment settings after all, each with its reason.
DEPLOYED_DESPITE_PREFIX: dict[str, str] = {
    "HASTE_LOCAL_ALLOW_IN_AZURE": "the operator's explicit opt-in to the local backend inside Azure; a deployment "
    "replaces every app setting, so only a deployed setting can keep it",
}

Condition = Mapping[str, tuple[str, ...]]  # mode setting -> values; all must hold


@dataclass(frozen=True)
class CodeSetting:
    name: str
    section: str
    description: str
    default: str  # environment form; "" = empty
    deploy_default: str  # what infra and the workflow must default to (marker "deploy_default", else default)
    always_required: bool
    required_when: tuple[Condition, ...]  # a value is needed when any condition holds
    adapter: TypeAdapter[Any] = field(compare=False, repr=False)
    choices: tuple[str, ...] = ()

    def requirement(self) -> str:
        if self.always_required:
            return "always (never empty)"
        if self.required_when:
            return " or ".join(
                " and ".join(f"{mode} = {' or '.join(values)}" for mode, values in condition.items())
                for condition in self.required_when
            )
        return "optional"

    def normalise(self, value: str) -> object:
        """``value`` as the code reads it (so ``60`` equals ``60.0``). Raises ValidationError."""
        if value == "":
            return ""
        python = self.adapter.validate_python(value)
        return to_env(python) if isinstance(python, enum.Enum) else python


def to_env(value: object) -> str:
    """A Python default in the form it takes as an environment variable."""
    if value is None or value is PydanticUndefined:
        return ""
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return ",".join(f"{k}={to_env(v)}" for k, v in value.items())
    if isinstance(value, list | tuple | set | frozenset):
        return ",".join(to_env(v) for v in value)
    return str(value)


def not_deployed_reason(name: str) -> str | None:
    """Why the code setting ``name`` is never deployed, or None when infra must emit it."""
    if name in NOT_DEPLOYED:
        return NOT_DEPLOYED[name]
    if name in DEPLOYED_DESPITE_PREFIX:
        return None
    for prefix, reason in NOT_DEPLOYED_PREFIXES.items():
        if name.startswith(prefix):
            return reason
    return None


def code_settings(sections: Mapping[str, type[BaseModel]] | None = None) -> dict[str, CodeSetting]:
    """Every setting the code declares: the fields of every section of ``hastegeo.settings.load.sections()``
    (the core ones and each registered backend's, from its descriptor), or of ``sections``."""
    if sections is None:
        from hastegeo.settings.load import sections as declared

        sections = declared()
    settings: dict[str, CodeSetting] = {}
    for section, model in sections.items():
        probed = _probe_requirements(model)
        for info in model.model_fields.values():
            if not info.alias:
                continue
            raw_default = info.get_default(call_default_factory=True)
            default = to_env(raw_default)
            marker_default = _marker(info, "deploy_default")
            conditions: list[Condition] = []
            for condition in [*_marker_conditions(info), *probed.get(info.alias, [])]:
                if condition not in conditions:
                    conditions.append(condition)
            settings[info.alias] = CodeSetting(
                name=info.alias,
                section=section,
                description=info.description or "",
                default=default,
                deploy_default=default if marker_default is None else to_env(marker_default),
                always_required=bool(default) or raw_default is PydanticUndefined,
                required_when=tuple(conditions),
                adapter=_adapter(info),
                choices=_choices(info.annotation),
            )
    return settings


def _choices(annotation: object) -> tuple[str, ...]:
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return tuple(str(member.value) for member in annotation)
    if typing.get_origin(annotation) is typing.Literal:
        return tuple(str(arg) for arg in typing.get_args(annotation))
    return ()


def _adapter(info: FieldInfo) -> TypeAdapter[Any]:
    annotation: Any = info.annotation
    if info.metadata:
        annotation = typing.Annotated[(annotation, *info.metadata)]
    return TypeAdapter(annotation)


def _marker(info: FieldInfo, key: str) -> object:
    extra = info.json_schema_extra
    return extra.get(key) if isinstance(extra, dict) else None


def _default(info: FieldInfo) -> str:
    return to_env(info.get_default(call_default_factory=True))


def _valid(model: type[BaseModel], env: Mapping[str, str]) -> bool:
    try:
        model.model_validate(dict(env))
    except ValidationError:
        return False
    return True


def _probe_requirements(model: type[BaseModel]) -> dict[str, list[Condition]]:
    """Which empty-by-default fields a section's validators refuse to leave empty, per combination of modes.

    A "mode" is an enum or Literal field. For every combination of mode values,
    build a valid environment (defaults, ``"probe"`` for empty strings, dropping a
    probe a validator rejects), then leave one field out at a time: if validation
    fails, that field is required in that combination. Combinations are folded
    into conditions (``{"AML_MODE": ("Existing", "Create")}``) where they form a box.
    """
    fields = {info.alias: info for info in model.model_fields.values() if info.alias}
    modes = {alias: _choices(info.annotation) for alias, info in fields.items() if _choices(info.annotation)}
    if not modes:
        return {}
    probes = {alias: "probe" for alias, info in fields.items() if not _default(info) and info.annotation is str}
    required: dict[str, set[tuple[str, ...]]] = {}
    names = sorted(modes)
    for combo in itertools.product(*(modes[name] for name in names)):
        env = {alias: _default(info) for alias, info in fields.items() if _default(info)}
        env |= probes | dict(zip(names, combo, strict=True))
        if not _valid(model, env):
            fixed = next(
                (alias for alias in probes if _valid(model, {k: v for k, v in env.items() if k != alias})), None
            )
            if fixed is None:
                continue  # this combination needs more than the probe knows; markers cover it
            env.pop(fixed)
        for alias in probes:
            if alias in env and not _valid(model, {k: v for k, v in env.items() if k != alias}):
                required.setdefault(alias, set()).add(combo)
    return {alias: _fold(names, modes, combos) for alias, combos in required.items()}


def _fold(names: list[str], modes: Mapping[str, tuple[str, ...]], combos: set[tuple[str, ...]]) -> list[Condition]:
    """Combinations of mode values as few conditions: one box when they form one, else one per combination."""
    projections = [tuple(v for v in modes[name] if any(c[i] == v for c in combos)) for i, name in enumerate(names)]
    box_size = 1
    for values in projections:
        box_size *= len(values)
    if box_size == len(combos):
        condition = {
            name: values for name, values in zip(names, projections, strict=True) if set(values) != set(modes[name])
        }
        return [condition]
    return [dict(zip(names, ((v,) for v in combo), strict=True)) for combo in sorted(combos)]


def _marker_conditions(info: FieldInfo) -> list[Condition]:
    """``json_schema_extra={"required_when": {...}}`` (one condition) or ``[{...}, ...]`` (any of them)."""
    marker = _marker(info, "required_when")
    items = marker if isinstance(marker, list) else [marker] if isinstance(marker, dict) else []
    conditions: list[Condition] = []
    for item in items:
        if isinstance(item, dict):
            conditions.append(
                {str(k): (v,) if isinstance(v, str) else tuple(str(x) for x in v) for k, v in item.items()}
            )
    return conditions
