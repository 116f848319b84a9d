"""The provider SDK fences are structural: the folder decides, not a ``noqa`` on the line.

``ruff`` reads the configuration nearest to a file: the root one bans every
provider SDK, and each adapter folder's ``ruff.toml`` lifts the ban on its own
SDK only. ``make lint`` runs the same ``ruff check``, so crossing a fence fails it.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.imports import modules_loaded_by, not_standard_library

REPO = Path(__file__).resolve().parents[2]
COMPUTE = "hastelib/src/hastegeo/compute"


def banned(path: str, source: str) -> bool:
    """Whether ``ruff check`` reports a banned import (TID251) in ``source`` placed at ``path``."""
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--select", "TID251", "--stdin-filename", path, "-"],
        input=source,
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert result.returncode in (0, 1), result.stderr
    return "TID251" in result.stdout


@pytest.mark.parametrize(
    ("folder", "allowed", "refused"),
    [
        (f"{COMPUTE}/azure_batch", "azure.batch", "azure.ai.ml"),
        (f"{COMPUTE}/azure_ml", "azure.ai.ml", "azure.batch"),
    ],
)
def test_each_adapter_folder_may_import_its_own_sdk_only(folder: str, allowed: str, refused: str) -> None:
    assert not banned(f"{folder}/probe.py", f"import {allowed}\n")
    assert banned(f"{folder}/probe.py", f"import {refused}\n")


@pytest.mark.parametrize("path", [f"{COMPUTE}/probe.py", f"{COMPUTE}/local/probe.py", "api/probe.py"])
def test_no_provider_sdk_outside_its_adapter_folder(path: str) -> None:
    assert banned(path, "import azure.batch\n")
    assert banned(path, "from azure.ai.ml import MLClient\n")


def test_no_adapter_file_silences_the_fence_line_by_line() -> None:
    noqa = [p for p in (REPO / COMPUTE).rglob("*.py") if "noqa: TID251" in p.read_text(encoding="utf-8")]
    assert noqa == []


def test_the_local_node_is_fenced_to_the_standard_library() -> None:
    node = f"{COMPUTE}/local_node/probe.py"
    assert banned(node, "from azure.core.exceptions import AzureError\n")
    assert banned(node, "import pydantic\n")
    assert banned(node, "from hastegeo.pipeline.poll import PollStep\n")
    assert banned(node, "from hastegeo.compute.local.adapter import LocalBackend\n")
    assert not banned(node, "from hastegeo.utils.files import read_json\n")
    assert not banned(node, "from hastegeo.utils.turns import admission_order\n")
    assert banned(node, "from hastegeo.pipeline.admission.fairshare import fill\n")  # the pipeline's admission
    assert not banned(f"{COMPUTE}/local/probe.py", "from azure.core.exceptions import AzureError\n")


def test_a_local_job_process_loads_the_standard_library_and_the_node_only() -> None:
    """What ``python -m hastegeo.compute.local_node.run`` imports before it runs the job's command."""
    loaded = not_standard_library(modules_loaded_by("import hastegeo.compute.local_node.run"))
    own = {"hastegeo", "hastegeo.compute", "hastegeo.compute.context", "hastegeo.workdir"}
    own |= {"hastegeo.utils", "hastegeo.utils.files", "hastegeo.utils.priority", "hastegeo.utils.turns"}
    own |= {"hastegeo.checkpoints", "hastegeo.checkpoints.layout"}  # the checkpoint folder's names (ADR 0044)
    foreign = sorted(name for name in loaded - own if not name.startswith("hastegeo.compute.local_node"))
    assert foreign == []


# Modules that may catch an Azure SDK error themselves, and why (see docs/adr/0028-one-provider-call.md).
CATCHES_AZURE_ERRORS = {
    f"{COMPUTE}/retry.py": "the one retried, translated provider call",
    f"{COMPUTE}/local/adapter.py": "its own storage I/O, retried by the storage client (ADR 0028)",
    f"{COMPUTE}/service.py": "the outputs' blob copy: a missing blob is an answer, the storage client retries",
    f"{COMPUTE}/azure_batch/logcopy.py": "the logs' blob copy (ADR 0045): a missing or raced blob is an answer",
    f"{COMPUTE}/transfer.py": "a ranged blob read (ADR 0045): missing, or past the end (416), is an answer",
}


def azure_errors_caught(path: Path) -> list[str]:
    """``except`` clauses in ``path`` that name an exception imported from ``azure.core.exceptions``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "azure.core.exceptions"
        for alias in node.names
    }
    caught = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ExceptHandler) and node.type is not None:
            names = {n.id for n in ast.walk(node.type) if isinstance(n, ast.Name)}
            names |= {n.attr for n in ast.walk(node.type) if isinstance(n, ast.Attribute)}
            caught += [f"{path.relative_to(REPO)}:{node.lineno} {name}" for name in sorted(names & imported)]
    return caught


def test_adapters_catch_no_azure_error_of_their_own() -> None:
    """Provider errors are retried and translated by compute/retry.py's one call, or handed back as data."""
    found = [
        hit
        for path in sorted((REPO / COMPUTE).rglob("*.py"))
        if str(path.relative_to(REPO)) not in CATCHES_AZURE_ERRORS
        for hit in azure_errors_caught(path)
    ]
    assert found == []
    assert azure_errors_caught(REPO / COMPUTE / "local" / "adapter.py"), "local catches none now: drop its entry"
