"""Presence: every deployment setting is in the code and in infra, and every operator setting is also
read by main.bicepparam and passed by the deploy workflow under the same name; nothing is anywhere else."""

from __future__ import annotations

from settings_drift.code import not_deployed_reason
from settings_drift.problems import APP_SETTINGS, BICEPPARAM, DEPLOY_WORKFLOW, MAIN_BICEP, Problem
from settings_drift.sources import INFRA_PARAMETER_PREFIXES, Sources


def check_presence(src: Sources) -> list[Problem]:
    return [*_code_and_infra(src), *_operator_and_derived(src), *_bicepparam(src), *_workflow(src)]


def _code_and_infra(src: Sources) -> list[Problem]:
    problems: list[Problem] = []
    deployed = {name for name in src.code if not_deployed_reason(name) is None}
    operator = src.app_settings.objects["operatorSettings"]
    derived = src.app_settings.objects["derivedSettings"]
    platform = src.app_settings.objects["platformSettings"]
    for name in sorted(deployed):
        if src.infra_entry(name) is None:
            problems.append(Problem(APP_SETTINGS, name, "declared by the code but not emitted by infra"))
        elif name in platform:
            problems.append(
                Problem(APP_SETTINGS, name, "is a code setting; list it in operatorSettings or derivedSettings")
            )
    for name in sorted(set(operator) | set(derived)):
        if name not in src.code:
            problems.append(
                Problem(APP_SETTINGS, name, "emitted by infra but not declared by the code (hastegeo.settings.load)")
            )
        elif name not in deployed:
            reason = not_deployed_reason(name)
            problems.append(Problem(APP_SETTINGS, name, f"emitted by infra but excluded from deployment: {reason}"))
    for name in sorted(set(operator) & set(derived)):
        problems.append(Problem(APP_SETTINGS, name, "listed in both operatorSettings and derivedSettings"))
    return problems


def _operator_and_derived(src: Sources) -> list[Problem]:
    problems: list[Problem] = []
    for name in sorted(src.app_settings.objects["operatorSettings"]):
        if name not in src.env_params:
            problems.append(Problem(BICEPPARAM, name, "an operator setting that main.bicepparam never reads"))
        if name not in src.workflow:
            problems.append(Problem(DEPLOY_WORKFLOW, name, "an operator setting the deploy workflow does not pass"))
    for name in sorted(src.app_settings.objects["derivedSettings"]):
        if name in src.env_params:
            problems.append(
                Problem(BICEPPARAM, name, "derived by infra, so it must not also be read from the environment")
            )
        if name in src.workflow:
            problems.append(Problem(DEPLOY_WORKFLOW, name, "derived by infra, so the workflow must not pass it"))
    return problems


def _bicepparam(src: Sources) -> list[Problem]:
    problems: list[Problem] = []
    operator = src.app_settings.objects["operatorSettings"]
    for name, env_param in sorted(src.env_params.items()):
        if name not in operator and not name.startswith(INFRA_PARAMETER_PREFIXES):
            prefixes = "/".join(p + "*" for p in INFRA_PARAMETER_PREFIXES)
            problems.append(
                Problem(
                    BICEPPARAM,
                    name,
                    f"read from the environment but neither an operator setting nor an infrastructure parameter "
                    f"({prefixes})",
                )
            )
        if env_param.param not in src.main.params:
            problems.append(
                Problem(
                    MAIN_BICEP, name, f"main.bicepparam sets param {env_param.param}, which main.bicep does not declare"
                )
            )
        if name not in src.workflow:
            problems.append(
                Problem(DEPLOY_WORKFLOW, name, "read by main.bicepparam but not passed by the deploy workflow")
            )
    return problems


def _workflow(src: Sources) -> list[Problem]:
    problems: list[Problem] = []
    for name, var in sorted(src.workflow.items()):
        if name not in src.env_params and not name.startswith(INFRA_PARAMETER_PREFIXES):
            problems.append(Problem(DEPLOY_WORKFLOW, name, "passed by the workflow but main.bicepparam never reads it"))
        if var.source is None:
            problems.append(
                Problem(
                    DEPLOY_WORKFLOW,
                    name,
                    f"not mapped from the GitHub Environment (set to {var.default!r} in {var.where}); "
                    f"use ${{{{ vars.{name} || 'default' }}}}",
                )
            )
        elif var.source_name != name:
            problems.append(
                Problem(DEPLOY_WORKFLOW, name, f"mapped from {var.source}.{var.source_name}; the names must match")
            )
    return problems
