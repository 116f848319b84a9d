"""Every command block in docs/ parses as shell, and the blocks that load azd's values hand them to
the commands they start.

`azd env get-values` prints ``KEY="value"`` lines without ``export``: ``eval`` of them alone sets
shell variables that no child process sees, so a ``haste`` or ``az`` started next would run
without them. The blocks are run for real in bash, every command but the shell's own replaced by a
stub that records the environment it was started with.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.drift.conftest import REPO

BLOCK = re.compile(r"```(?:sh|bash|shell)\n(.*?)```", re.DOTALL)
PLACEHOLDER = re.compile(r"<[A-Za-z][^<>\n]*>")
# What the stand-in `azd env get-values` prints: azd's own form.
AZD_VALUES = {
    "AZURE_ENV_NAME": "dev",
    "AZURE_SUBSCRIPTION_ID": "12345678-1234-1234-1234-123456789012",
    "AZURE_RESOURCE_GROUP": "rg-dev",
    "FUNCTION_APP_NAME": "func-haste-abc123",
    "HASTE_API_URL": "https://func-haste-abc123.azurewebsites.net",
    "HASTE_API_SCOPE": "api://33333333-3333-4333-8333-333333333333/.default",
}
SHELL_WORDS = frozenset(
    [
        "set",
        "eval",
        "export",
        "echo",
        "cd",
        "for",
        "do",
        "done",
        "if",
        "then",
        "else",
        "fi",
        "in",
        "while",
        "true",
        "false",
        "test",
        "read",
        "local",
        "printf",
        "source",
        "unset",
        "shift",
        "exit",
        "return",
        "case",
        "esac",
        "function",
    ]
)
COMMAND = re.compile(r"(?:^|[|;&]\s*|\$\(\s*|&&\s*|\|\|\s*)([A-Za-z][\w.+-]*)", re.MULTILINE)
STUB = """#!{python}
import json, os, sys
name = os.path.basename(sys.argv[0])
with open(os.environ["DOC_STUB_LOG"], "a") as log:
    log.write(json.dumps({{"tool": name, "argv": sys.argv[1:], "env": dict(os.environ)}}) + "\\n")
if name == "azd" and sys.argv[1:3] == ["env", "get-values"]:
    for key, value in json.loads(os.environ["DOC_AZD_VALUES"]).items():
        print(f'{{key}}="{{value}}"')
"""


def blocks() -> list[tuple[str, str]]:
    found = []
    for path in sorted((REPO / "docs").rglob("*.md")):
        text = path.read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            line = text[: match.start()].count("\n") + 2
            found.append((f"{path.relative_to(REPO)}:{line}", match.group(1)))
    return found


def runnable(block: str) -> str:
    """The block with its placeholders (<group id>) made words, as a reader fills them in."""
    return PLACEHOLDER.sub("PLACEHOLDER", block)


@pytest.mark.parametrize(("where", "block"), blocks(), ids=[where for where, _ in blocks()])
def test_every_command_block_parses(where: str, block: str) -> None:
    parsed = subprocess.run(["bash", "-n"], input=runnable(block), text=True, capture_output=True, check=False)
    assert parsed.returncode == 0, f"{where}: {parsed.stderr}"


LOADING = [(where, block) for where, block in blocks() if "azd env get-values" in block]


def run_block(block: str, tmp_path: Path) -> list[dict[str, object]]:
    stubs = tmp_path / "bin"
    stubs.mkdir()
    for word in set(COMMAND.findall(block)) - SHELL_WORDS:
        stub = stubs / word
        stub.write_text(STUB.format(python=sys.executable), encoding="utf-8")
        stub.chmod(0o755)
    log = tmp_path / "calls.jsonl"
    env = {
        "PATH": str(stubs),
        "HOME": str(tmp_path),
        "DOC_STUB_LOG": str(log),
        "DOC_AZD_VALUES": json.dumps(AZD_VALUES),
    }
    result = subprocess.run(
        ["/bin/bash", "-c", runnable(block)], env=env, cwd=tmp_path, text=True, capture_output=True, check=False
    )
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize(("where", "block"), LOADING, ids=[where for where, _ in LOADING])
def test_azds_values_reach_the_commands_a_block_starts(where: str, block: str, tmp_path: Path) -> None:
    calls = run_block(block, tmp_path)
    loaded = next(i for i, call in enumerate(calls) if call["tool"] == "azd")
    later = calls[loaded + 1 :]
    assert later, f"{where}: no command after loading azd's values"
    for call in later:
        env = call["env"]
        assert isinstance(env, dict)
        missing = sorted(key for key in AZD_VALUES if key not in env)
        assert not missing, f"{where}: `{call['tool']} {' '.join(map(str, call['argv']))}` starts without {missing}"


def test_a_plain_eval_would_be_caught(tmp_path: Path) -> None:
    calls = run_block('eval "$(azd env get-values)"\nhaste doctor\n', tmp_path)
    assert "AZURE_RESOURCE_GROUP" not in calls[-1]["env"]  # type: ignore[operator]


def test_some_blocks_load_azds_values() -> None:
    assert LOADING, "no block in docs/ loads azd's values: the test above checks nothing"
