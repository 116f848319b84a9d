"""Run every check, or print / refresh the settings table: what ``check_drift.py`` runs."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from settings_drift.code import CodeSetting
from settings_drift.defaults import check_defaults
from settings_drift.docs import check_docs, settings_markdown, write_docs
from settings_drift.emptiness import check_values
from settings_drift.expressions import AnalysisError
from settings_drift.presence import check_presence
from settings_drift.problems import DEPLOY_DOC, REPO, DriftSourceError, Problem
from settings_drift.sources import Sources, read_sources

CHECKS: tuple[Callable[[Sources], list[Problem]], ...] = (check_presence, check_defaults, check_values, check_docs)


def run_checks(root: Path = REPO, code: dict[str, CodeSetting] | None = None) -> list[Problem]:
    """All problems found in the tree at ``root`` (empty list: no drift)."""
    try:
        src = read_sources(root, code)
    except (DriftSourceError, AnalysisError) as exc:
        return [Problem("drift check", "sources", str(exc))]
    return [problem for check in CHECKS for problem in check(src)]


def main(argv: list[str] | None = None) -> int:
    """Exit status 0 when code, infra and the deploy workflow agree, 1 with one line per problem otherwise."""
    parser = argparse.ArgumentParser(description="Drift check: code settings, infra app settings and deploy workflow")
    parser.add_argument("--root", type=Path, default=REPO, help="repository root (default: this checkout)")
    parser.add_argument("--markdown", action="store_true", help="print the settings table and exit")
    parser.add_argument("--write-docs", action="store_true", help=f"refresh the table in {DEPLOY_DOC}")
    args = parser.parse_args(argv)
    if args.markdown:
        sys.stdout.write(settings_markdown(read_sources(args.root)))
        return 0
    if args.write_docs:
        changed = write_docs(args.root)
        print(f"{DEPLOY_DOC}: {'updated' if changed else 'already up to date'}")
        return 0
    problems = run_checks(args.root)
    for problem in problems:
        print(f"drift: {problem}", file=sys.stderr)
    if problems:
        print(f"drift check failed: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print("drift check: code, infra and deploy workflow agree")
    return 0
