"""Drift check: the settings the code declares, the app settings infra/ emits and the deploy workflow agree.

Three sources are read, none of them hard-coded here (docs/adr/0005, 0010):

1. **Code** (:mod:`.code`) — every field of every section in ``hastegeo.settings.load.sections()``
   (the core ones and each registered backend's, from its descriptor).
2. **Infra** (:mod:`.bicep`) — ``infra/modules/appSettings.bicep``, the one list of app
   settings (``operatorSettings``, ``derivedSettings``, ``platformSettings``, one
   ``NAME: expression`` per line), ``infra/main.bicep`` and ``infra/main.bicepparam``.
3. **Workflow** (:mod:`.workflow`) — ``.github/workflows/deploy.yml``'s ``env`` mappings.

One module per check: :mod:`.presence` (a setting in one place but not another),
:mod:`.defaults` (defaults differ), :mod:`.emptiness` (a setting can be emitted empty
in a mode that needs it; uses :mod:`.expressions` and :mod:`.evaluate`) and
:mod:`.docs` (the generated table in docs/deploy.md is stale). :mod:`.cli` runs them.
Every message names the setting and the file to fix.

This package re-exports the names tests and tools use.
"""

from __future__ import annotations

from settings_drift.bicep import BicepFile, BicepParam, EnvParam, parse_bicep, parse_bicepparam, strip_comment
from settings_drift.cli import CHECKS, main, run_checks
from settings_drift.code import (
    DEPLOYED_DESPITE_PREFIX,
    NOT_DEPLOYED,
    NOT_DEPLOYED_PREFIXES,
    CodeSetting,
    code_settings,
    not_deployed_reason,
    to_env,
)
from settings_drift.docs import TABLE_END, TABLE_START, settings_markdown, write_docs
from settings_drift.emptiness import outcomes, representatives
from settings_drift.evaluate import evaluate
from settings_drift.expressions import AnalysisError, Opaque, Value, parse_expression
from settings_drift.problems import DriftSourceError, Problem
from settings_drift.sources import Sources, read_sources
from settings_drift.workflow import WorkflowVar, workflow_env

__all__ = [
    "CHECKS",
    "DEPLOYED_DESPITE_PREFIX",
    "NOT_DEPLOYED",
    "NOT_DEPLOYED_PREFIXES",
    "TABLE_END",
    "TABLE_START",
    "AnalysisError",
    "BicepFile",
    "BicepParam",
    "CodeSetting",
    "DriftSourceError",
    "EnvParam",
    "Opaque",
    "Problem",
    "Sources",
    "Value",
    "WorkflowVar",
    "code_settings",
    "evaluate",
    "main",
    "not_deployed_reason",
    "outcomes",
    "parse_bicep",
    "parse_bicepparam",
    "parse_expression",
    "read_sources",
    "representatives",
    "run_checks",
    "settings_markdown",
    "strip_comment",
    "to_env",
    "workflow_env",
    "write_docs",
]
