"""Everything the checks compare, read once: the code's settings, the Bicep files and the deploy workflow."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from settings_drift.bicep import BicepFile, EnvParam, parse_bicep, parse_bicepparam
from settings_drift.code import CodeSetting, code_settings
from settings_drift.problems import APP_SETTINGS, BICEPPARAM, DEPLOY_WORKFLOW, MAIN_BICEP, DriftSourceError
from settings_drift.workflow import WorkflowVar, workflow_env

SETTINGS_OBJECTS = ("operatorSettings", "derivedSettings", "platformSettings")
# Variables the workflow and main.bicepparam may carry that are not app settings:
# deployment target and infrastructure sizing (AZURE_* follows azd's naming).
INFRA_PARAMETER_PREFIXES = ("AZURE_", "DEPLOY_")


@dataclass
class Sources:
    root: Path
    code: dict[str, CodeSetting]
    app_settings: BicepFile
    main: BicepFile
    env_params: dict[str, EnvParam]
    workflow: dict[str, WorkflowVar]

    def infra_entry(self, name: str) -> tuple[str, str, int] | None:
        """(object, expression, line) for a setting in appSettings.bicep."""
        for obj in SETTINGS_OBJECTS:
            entries = self.app_settings.objects.get(obj, {})
            if name in entries:
                expression, line = entries[name]
                return obj, expression, line
        return None


def read_sources(root: Path, code: dict[str, CodeSetting] | None = None) -> Sources:
    """Raises DriftSourceError when a file is missing or strays from the layout the check reads."""

    def text(relative: str) -> str:
        path = root / relative
        if not path.is_file():
            raise DriftSourceError(f"{relative} is missing")
        return path.read_text(encoding="utf-8")

    app = parse_bicep(text(APP_SETTINGS), APP_SETTINGS)
    missing = [obj for obj in SETTINGS_OBJECTS if obj not in app.objects]
    if missing:
        raise DriftSourceError(f"{APP_SETTINGS} must define {', '.join(missing)} (one 'NAME: value' per line)")
    return Sources(
        root=root,
        code=code_settings() if code is None else code,
        app_settings=app,
        main=parse_bicep(text(MAIN_BICEP), MAIN_BICEP),
        env_params=parse_bicepparam(text(BICEPPARAM), BICEPPARAM),
        workflow=workflow_env(text(DEPLOY_WORKFLOW)),
    )
