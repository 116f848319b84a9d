"""What every part of the drift check shares: the files it reads and the shape of a finding."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
APP_SETTINGS = "infra/modules/appSettings.bicep"
MAIN_BICEP = "infra/main.bicep"
BICEPPARAM = "infra/main.bicepparam"
DEPLOY_WORKFLOW = ".github/workflows/deploy.yml"
DEPLOY_DOC = "docs/deploy.md"


@dataclass(frozen=True)
class Problem:
    """One disagreement, named by file (and line where known) and setting, so the fix is obvious."""

    file: str
    setting: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.setting}: {self.message}"


class DriftSourceError(Exception):
    """A source cannot be read or parsed; reported as a problem, never a traceback."""
