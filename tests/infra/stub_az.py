"""A stand-in ``az`` (and ``azd``) for testing the deployment scripts: it records and answers.

:func:`install` writes an executable named ``az`` into a folder to put first on PATH. Each call
appends one JSON line to the log: the argv, and the content of any ``--body @file`` (the scripts
delete their temporary files on exit). The answer is the first rule whose tokens all appear in
the argv, in order: ``{"match": [...], "stdout": "...", "exit": 0}``, with ``"times": n`` for a rule
that answers only its first n matching calls (a refusal that stops); no matching rule prints
nothing and exits 0, like ``az ... --output tsv`` with an empty result. ``docker`` is stubbed too.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_STUB = """#!{python}
import json, os, sys
argv = sys.argv[1:]
entry = {{"tool": os.path.basename(sys.argv[0]), "argv": argv}}
if "--body" in argv:
    body = argv[argv.index("--body") + 1]
    entry["body"] = json.load(open(body[1:])) if body.startswith("@") else json.loads(body)
with open(os.environ["AZ_STUB_LOG"], "a") as log:
    log.write(json.dumps(entry) + "\\n")
def matches(tokens):
    position = 0
    for token in tokens:
        try:
            position = argv.index(token, position) + 1
        except ValueError:
            return False
    return True
for index, rule in enumerate(json.load(open(os.environ["AZ_STUB_RULES"]))):
    if rule.get("tool", "az") == entry["tool"] and matches(rule["match"]):
        if "times" in rule:  # the rule answers its first `times` matching calls only
            counter = os.environ["AZ_STUB_LOG"] + f".rule{{index}}"
            used = int(open(counter).read()) if os.path.exists(counter) else 0
            if used >= rule["times"]:
                continue
            open(counter, "w").write(str(used + 1))
        sys.stdout.write(rule.get("stdout", ""))
        sys.stderr.write(rule.get("stderr", ""))
        sys.exit(rule.get("exit", 0))
"""


@dataclass
class StubAz:
    folder: Path
    log: Path
    rules: Path

    def answer(self, rules: list[dict[str, Any]]) -> None:
        self.rules.write_text(json.dumps(rules), encoding="utf-8")

    def calls(self, tool: str = "az") -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        entries = [json.loads(line) for line in self.log.read_text(encoding="utf-8").splitlines()]
        return [entry for entry in entries if entry["tool"] == tool]

    def commands(self, tool: str = "az") -> list[str]:
        return [" ".join(entry["argv"]) for entry in self.calls(tool)]

    def env(self, **extra: str) -> dict[str, str]:
        return {
            "PATH": f"{self.folder}{os.pathsep}{os.environ.get('PATH', '')}",
            "HOME": str(self.folder),
            "AZ_STUB_LOG": str(self.log),
            "AZ_STUB_RULES": str(self.rules),
            **extra,
        }


def install(folder: Path) -> StubAz:
    folder.mkdir(parents=True, exist_ok=True)
    for tool in ("az", "azd", "docker"):
        path = folder / tool
        path.write_text(_STUB.format(python=sys.executable), encoding="utf-8")
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    stub = StubAz(folder, folder / "calls.jsonl", folder / "rules.json")
    stub.answer([])
    return stub
