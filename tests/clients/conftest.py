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
from typing import Any, Literal

import pytest

from hastegeo.settings.load import load_settings
from hastegeo.store.queues import GroupMessage
from hastegeo_dev.checkout import repo_root
from hastegeo_dev.stack import LocalStack
from tests.fuzz.conftest import FuzzStack
from tests.support.runtime import development_runtime

pytestmark = [pytest.mark.azurite, pytest.mark.slow]

ROOT = repo_root()
NODE_BIN = ROOT / "node_modules" / ".bin"
PYTHON_PACKAGE = "haste_client"
DRIVERS = ("drive.ts", "drive_groups.ts")  # compiled together; the fixture answers drive.js's path
# Operations of the document every client drives; the rest are named with the reason they are not.
DRIVEN = (
    "submitJob",
    "getJob",
    "listJobs",
    "cancelJob",
    "retryJob",
    "getJobLogs",
    "listBackends",
    "health",
    "submitGroup",
    "getGroup",
    "cancelGroup",
    "retryGroup",
)
NOT_DRIVEN = {
    "openapi": "the document itself: the clients are generated from it",
    "consoleIndex": "a file for a browser (tests/browser)",
    "consoleConfig": "a file for a browser (tests/browser)",
    "consoleFile": "a file for a browser (tests/browser)",
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
    """``openapi-typescript``'s types for the document, and tests/clients/drive*.ts compiled against them."""
    folder = tmp_path_factory.mktemp("typescript-client")
    (folder / "node_modules").symlink_to(ROOT / "node_modules", target_is_directory=True)
    (folder / "package.json").write_text('{"type": "module", "private": true}\n')
    _run([str(NODE_BIN / "openapi-typescript"), str(served_document), "--output", str(folder / "schema.d.ts")], folder)
    for name in DRIVERS:
        (folder / name).write_text((Path(__file__).with_name(name)).read_text())
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
        "files": [*DRIVERS, "schema.d.ts"],
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


class GroupSteps:
    """The ``groups-make`` queue's step for a group, delivered by the test as the queue would deliver it.

    The clients' host serves HTTP only (its queues stay still, so every answer is known); a group's items
    become jobs (and are cancelled) in that step, so the test runs it between the clients' calls, chunk
    after chunk, in a runtime over the same storage. The items' own submits stay on ``groups-submit``.
    """

    def __init__(self, stack: LocalStack) -> None:
        self._runtime = development_runtime(load_settings(stack.env))

    def deliver(self, group_id: str, kind: Literal["make", "cancel"] = "make") -> None:
        message: GroupMessage | None = GroupMessage(group_id=group_id, kind=kind)
        while message is not None:
            message = self._runtime.groups.handle(message)

    def cancelled(self, group_id: str) -> None:
        """What the cancel route's two messages do: cancel the made items, then mark the unmade ones."""
        self.deliver(group_id, "cancel")
        self.deliver(group_id, "make")


@pytest.fixture(scope="session")
def group_steps(client_stack: LocalStack) -> GroupSteps:
    return GroupSteps(client_stack)
