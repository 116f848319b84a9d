"""Clients nobody here wrote: generated from the document the development host serves, by widely used generators.

One stack for the folder (Azurite and a development host serving HTTP only, so jobs stay
queued and every step's answer is known), the document it serves saved once, and each
generated client built once per session in a temporary folder. The generators are pinned:
``openapi-python-client`` (requirements-dev.txt) and ``openapi-typescript`` with
``openapi-fetch`` and ``typescript`` (package.json).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hastegeo_dev.checkout import repo_root
from hastegeo_dev.stack import LocalStack
from tests.fuzz.conftest import FuzzStack

pytestmark = [pytest.mark.azurite, pytest.mark.slow]

ROOT = repo_root()
NODE_BIN = ROOT / "node_modules" / ".bin"
PYTHON_PACKAGE = "haste_client"
# Operations of the document every client drives; the rest are named with the reason they are not.
DRIVEN = ("submitJob", "getJob", "listJobs", "cancelJob", "retryJob", "getJobLogs", "listBackends", "health")
NOT_DRIVEN = {
    "openapi": "the document itself: the clients are generated from it",
    "consoleIndex": "a file for a browser (tests/browser)",
    "consoleConfig": "a file for a browser (tests/browser)",
    "consoleFile": "a file for a browser (tests/browser)",
    # Issue 39 asks for it; left for later: tests/integration/test_groups_api.py drives the routes.
    "submitGroup": "job groups (ADR 0040): not driven through the generated clients yet",
    "getGroup": "job groups (ADR 0040): not driven through the generated clients yet",
    "cancelGroup": "job groups (ADR 0040): not driven through the generated clients yet",
    "retryGroup": "job groups (ADR 0040): not driven through the generated clients yet",
    "getProjectCosts": "read by `haste costs` and the console (tests/unit/cli, tests/browser, tests/integration/costs)",
    "setProjectBudget": "an admin's call (tests/integration/costs); the clients' walk runs as a submitter",
}


@pytest.fixture(scope="session")
def client_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    with FuzzStack(tmp_path_factory.mktemp("clients-stack")) as running:
        yield running


@pytest.fixture(scope="session")
def served_document(client_stack: LocalStack, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The OpenAPI document as the host serves it (not as the code builds it), saved for the generators."""
    with urllib.request.urlopen(f"{client_stack.base_url}/api/openapi.json", timeout=30) as response:
        document = json.loads(response.read())
    path = tmp_path_factory.mktemp("served") / "openapi.json"
    path.write_text(json.dumps(document))
    return path


def operation_ids(document_path: Path) -> set[str]:
    document: dict[str, Any] = json.loads(document_path.read_text())
    return {op["operationId"] for item in document["paths"].values() for op in item.values() if "operationId" in op}


def _run(command: list[str], cwd: Path) -> None:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    # A generator that dropped a schema says so and still exits 0: any warning fails the build.
    said = (done.stdout + done.stderr).lower()
    assert "warning" not in said, said[-3000:]
    assert "unable to" not in said, said[-3000:]


@pytest.fixture(scope="session")
def python_client(served_document: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The package ``openapi-python-client`` generates, imported from a session folder."""
    folder = tmp_path_factory.mktemp("python-client")
    config = folder / "config.yaml"
    config.write_text("post_hooks: []\n")  # no formatter run: the code is imported as generated
    generator = Path(sys.executable).with_name("openapi-python-client")
    _run(
        [
            str(generator),
            "generate",
            "--path",
            str(served_document),
            "--output-path",
            str(folder / PYTHON_PACKAGE),
            "--meta",
            "none",
            "--config",
            str(config),
        ],
        folder,
    )
    sys.path.insert(0, str(folder))
    try:
        import importlib

        return importlib.import_module(PYTHON_PACKAGE)
    finally:
        sys.path.remove(str(folder))


@pytest.fixture(scope="session")
def typescript_driver(served_document: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``openapi-typescript``'s types for the document, and tests/clients/drive.ts compiled against them."""
    folder = tmp_path_factory.mktemp("typescript-client")
    (folder / "node_modules").symlink_to(ROOT / "node_modules", target_is_directory=True)
    (folder / "package.json").write_text('{"type": "module", "private": true}\n')
    _run([str(NODE_BIN / "openapi-typescript"), str(served_document), "--output", str(folder / "schema.d.ts")], folder)
    (folder / "drive.ts").write_text((Path(__file__).with_name("drive.ts")).read_text())
    tsconfig = {
        "compilerOptions": {
            "target": "es2022",
            "module": "nodenext",
            "moduleResolution": "nodenext",
            "strict": True,
            "noUncheckedIndexedAccess": True,
            "skipLibCheck": False,
            "outDir": "out",
            "types": [],
            "lib": ["es2022", "dom"],
        },
        "files": ["drive.ts", "schema.d.ts"],
    }
    (folder / "tsconfig.json").write_text(json.dumps(tsconfig))
    _run([str(NODE_BIN / "tsc"), "--project", str(folder / "tsconfig.json")], folder)
    return folder / "out" / "drive.js"


def run_node(script: Path, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        ["node", str(script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "NODE_NO_WARNINGS": "1"},
    )
    assert done.returncode == 0, f"node {script.name} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result
