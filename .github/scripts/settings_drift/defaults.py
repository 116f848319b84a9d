"""Defaults: the code's default (or its ``deploy_default`` marker) is the default in main.bicepparam,
main.bicep and the deploy workflow, compared through the field's own type (``60`` equals ``60.0``)."""

from __future__ import annotations

from pydantic import ValidationError

from settings_drift.bicep import literal_default
from settings_drift.code import CodeSetting, not_deployed_reason
from settings_drift.problems import BICEPPARAM, DEPLOY_WORKFLOW, MAIN_BICEP, Problem
from settings_drift.sources import INFRA_PARAMETER_PREFIXES, Sources


def check_defaults(src: Sources) -> list[Problem]:
    problems: list[Problem] = []
    for name in sorted(src.app_settings.objects["operatorSettings"]):
        setting = src.code.get(name)
        if setting is not None and not not_deployed_reason(name):
            problems.extend(_setting_defaults(src, setting))
    # Infrastructure parameters: main.bicepparam and the workflow agree on their defaults.
    for name, env_param in sorted(src.env_params.items()):
        var = src.workflow.get(name)
        if not name.startswith(INFRA_PARAMETER_PREFIXES) or var is None or var.source is None:
            continue
        if env_param.default is not None and var.default != env_param.default:
            message = f"default {var.default!r} differs from main.bicepparam's {env_param.default!r}"
            problems.append(Problem(DEPLOY_WORKFLOW, name, message))
    return problems


def _setting_defaults(src: Sources, setting: CodeSetting) -> list[Problem]:
    name = setting.name
    problems: list[Problem] = []
    candidates: list[tuple[str, str]] = []
    env_param = src.env_params.get(name)
    if env_param is not None:
        if env_param.default is None:
            problems.append(Problem(BICEPPARAM, name, "readEnvironmentVariable needs a default (the code's)"))
        else:
            candidates.append((BICEPPARAM, env_param.default))
        main_param = src.main.params.get(env_param.param)
        if main_param is not None and main_param.default is not None:
            candidates.append((MAIN_BICEP, literal_default(main_param.default) or f"<{main_param.default}>"))
    var = src.workflow.get(name)
    if var is not None and var.source is not None:
        candidates.append((DEPLOY_WORKFLOW, var.default))
    expected = setting.normalise(setting.deploy_default)
    for file, value in candidates:
        try:
            actual = setting.normalise(value)
        except ValidationError as exc:
            reason = exc.errors(include_url=False)[0]["msg"]
            problems.append(Problem(file, name, f"default {value!r} is not a valid value for the code: {reason}"))
            continue
        if actual != expected:
            message = f"default {value!r} differs from the code's default {setting.deploy_default!r}"
            problems.append(Problem(file, name, message))
    return problems
