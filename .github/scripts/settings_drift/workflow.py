"""Read the deploy workflow's ``env`` mappings: each value ``${{ vars.NAME || 'default' }}`` (or ``secrets.``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import yaml

from settings_drift.problems import DEPLOY_WORKFLOW, DriftSourceError

_WORKFLOW_VALUE = re.compile(r"\$\{\{\s*(vars|secrets)\.([A-Za-z_]\w*)\s*(?:\|\|\s*'((?:[^']|'')*)'\s*)?\}\}")


@dataclass(frozen=True)
class WorkflowVar:
    name: str
    source: str | None  # "vars" / "secrets"; None when not mapped from the environment
    source_name: str | None
    default: str  # the `|| 'x'` fallback; "" when none
    where: str


def workflow_env(text: str) -> dict[str, WorkflowVar]:
    """The workflow-level and job-level ``env`` entries, with their vars/secrets mapping.

    Settings are mapped at job level (every step, what-if and deploy alike, sees them);
    step-level ``env`` is plumbing between steps and is not read.
    """
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise DriftSourceError(f"{DEPLOY_WORKFLOW} is not valid YAML: {exc}") from None
    if not isinstance(document, dict):
        raise DriftSourceError(f"{DEPLOY_WORKFLOW} is not a workflow mapping")
    blocks: list[tuple[str, object]] = [("env", document.get("env"))]
    for job_name, job in (document.get("jobs") or {}).items():
        if isinstance(job, dict):
            blocks.append((f"jobs.{job_name}.env", job.get("env")))
    found: dict[str, WorkflowVar] = {}
    for where, block in blocks:
        if not isinstance(block, dict):
            continue
        for key, value in block.items():
            name = str(key)
            match = _WORKFLOW_VALUE.fullmatch(str(value).strip())
            if match:
                source, source_name, default = match.groups()
                found[name] = WorkflowVar(name, source, source_name, (default or "").replace("''", "'"), where)
            else:
                found.setdefault(name, WorkflowVar(name, None, None, str(value), where))
    return found
