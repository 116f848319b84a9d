"""The doctor's report: a table for people, JSON for CI."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from textwrap import TextWrapper

from hastegeo.doctor.result import FAILING, CheckResult, Status

MARK = {Status.PASS: "ok", Status.WARN: "warn", Status.FAIL: "FAIL", Status.UNKNOWN: "??"}


def as_json(results: Sequence[CheckResult]) -> str:
    failing = sum(result.status in FAILING for result in results)
    return json.dumps({"ok": failing == 0, "failing": failing, "checks": [r.to_dict() for r in results]}, indent=2)


def as_table(results: Sequence[CheckResult], width: int | None = None) -> str:
    """One row per check (status, area, check, found); each fix on indented lines under its row."""
    width = width or shutil.get_terminal_size((120, 20)).columns
    name_width = min(max((len(r.name) for r in results), default=10), 48)
    lines = [f"{'':4}  {'area':<9}  {'check':<{name_width}}  found", "-" * min(width, 120)]
    indent = " " * 17
    for result in results:
        head = f"{MARK[result.status]:<4}  {result.area:<9}  {result.name:<{name_width}}  "
        lines.extend(_wrap(result.found, width, head, " " * len(head)) or [head])
        if result.fix:
            lines.extend(_wrap(result.fix, width, indent + "fix: ", indent + "     "))
    counts = {status: sum(r.status is status for r in results) for status in Status}
    lines.append(", ".join(f"{n} {status.value}" for status, n in counts.items() if n) or "no checks ran")
    return "\n".join(lines)


def as_markdown(results: Sequence[CheckResult]) -> str:
    """The report as a Markdown table (a CI job summary): what did not pass first, each with its fix."""
    order = sorted(results, key=lambda r: (r.status is Status.PASS, r.status is Status.WARN))
    rows = ["| | area | check | found | fix |", "| --- | --- | --- | --- | --- |"]
    for r in order:
        mark = MARK[r.status] + (" (later)" if r.deferred and r.status in FAILING else "")
        cells = [mark, r.area, r.name, r.found, r.fix]
        rows.append("| " + " | ".join(cell.replace("|", "\\|").replace("\n", " ") for cell in cells) + " |")
    counts = {status: sum(r.status is status for r in results) for status in Status}
    later = sum(r.deferred and r.status in FAILING for r in results)
    head = ", ".join(f"{n} {status.value}" for status, n in counts.items() if n) or "no checks ran"
    note = f" ({later} left for the operator after the deploy, docs/deploy.md)" if later else ""
    return "\n".join([f"### haste doctor: {head}{note}", "", *rows])


def _wrap(text: str, width: int, first: str, rest: str) -> list[str]:
    """Wrap at spaces only: commands, ids and URLs stay whole so they can be copied."""
    wrapper = TextWrapper(width, initial_indent=first, subsequent_indent=rest, break_on_hyphens=False)
    wrapper.break_long_words = False
    return wrapper.wrap(text)
