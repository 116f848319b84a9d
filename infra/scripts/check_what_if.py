"""Stop a deployment when ``az deployment ... what-if`` reports an error; print what would change.

``az deployment sub what-if --no-pretty-print --output json`` exits 0 for some failures and
puts them in the result instead (``status`` other than ``Succeeded``, an ``error`` object with
nested ``details``). The deploy workflow pipes that JSON here, so a template or validation error
stops the run before ``az deployment sub create`` touches anything.

Usage: ``python infra/scripts/check_what_if.py what-if.json`` — exit 0 when what-if succeeded,
1 when it reported an error (every message is printed), 2 when the file is not a what-if result.
Standard library only: it runs on the GitHub runner before anything is installed.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any


def error_messages(error: Mapping[str, Any] | None, depth: int = 0) -> Iterator[str]:
    """``code: message`` of an ARM error and of every nested detail, indented by depth."""
    if not error:
        return
    yield f"{'  ' * depth}{error.get('code', 'Error')}: {error.get('message', '(no message)')}"
    for detail in error.get("details") or []:
        yield from error_messages(detail, depth + 1)


def summarise(result: Mapping[str, Any]) -> tuple[bool, list[str]]:
    """(succeeded, lines to print) for a what-if result."""
    status = str(result.get("status", ""))
    errors = list(error_messages(result.get("error")))
    changes = result.get("changes") or []
    counts = Counter(str(change.get("changeType", "Unknown")) for change in changes)
    lines = [f"what-if status: {status or '(missing)'}"]
    lines += [f"  {kind}: {count}" for kind, count in sorted(counts.items())]
    for change in changes:
        if change.get("changeType") not in ("NoChange", "Ignore"):
            lines.append(f"  {change.get('changeType')}: {change.get('resourceId')}")
    ok = status == "Succeeded" and not errors
    if not ok:
        lines.append("::error::what-if reported an error; nothing was deployed")
        lines += errors or [f"status {status or '(missing)'} without an error object"]
    return ok, lines


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: check_what_if.py <what-if result json>", file=sys.stderr)
        return 2
    try:
        result = json.loads(Path(args[0]).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"::error::cannot read the what-if result {args[0]}: {exc}", file=sys.stderr)
        return 2
    if not isinstance(result, dict):
        print(f"::error::{args[0]} is not a what-if result (a JSON object)", file=sys.stderr)
        return 2
    ok, lines = summarise(result)
    print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
