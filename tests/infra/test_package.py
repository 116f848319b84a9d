"""The one deployment package (``make package``, docs/adr/0013): what it holds, and that it runs.

Every deploy path ships this package: the deploy workflow and ``azd deploy --from-package``
upload the zip, ``azd up`` packs the repository with the same ``.funcignore`` the builder
reads, and ``func azure functionapp publish`` runs from the unpacked folder. The slow test
installs the package the way the Flex Consumption remote build does (a clean venv,
``pip install -r requirements.txt`` in the unpacked folder), indexes ``function_app`` with
the real ``azure.functions`` and compares with the development venv and the development host.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from hastegeo.store.queues import ALL_QUEUES
from hastegeo_dev.devhost.functions import discover, load_app

REPO = Path(__file__).resolve().parents[2]
INDEX_SCRIPT = Path(__file__).with_name("function_index.py")
# What runs in Azure; anything else at the top of the package is a .funcignore rule missing.
SHIPPED_TOP_LEVEL = {"api", "function_app.py", "host.json", "requirements.txt", "hastelib"}
# Wheels for the clean-venv install, downloaded once per requirements into the user's cache, so that every
# checkout (a fresh clone included) shares them: resolving and downloading them costs about 30 s of CPU.
WHEELHOUSES = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hastegeo" / "wheelhouse"
DEV_MARKERS = ("hastelib/dev/", "hastegeo_dev", "hastegeo/devhost/", "hastegeo/testing/")


def _env() -> dict[str, str]:
    """This environment without the app's settings and without anything that points Python at the repository."""
    drop = ("HASTE_", "BATCH_", "AML_", "AzureWebJobs", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
    return {key: value for key, value in os.environ.items() if not key.startswith(drop)}


def _run(args: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout, check=False)


def _build(out: Path) -> Path:
    """``make package`` into ``out`` (the target people and the deploy workflow run)."""
    done = _run(
        ["make", "-s", "--no-print-directory", "package", f"PACKAGE_DIR={out}", f"PYTHON={sys.executable}"], REPO
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build(tmp_path_factory.mktemp("package"))


def _names(out: Path) -> list[str]:
    with zipfile.ZipFile(out / "function-app.zip") as archive:
        return archive.namelist()


def _tracked(*folders: str) -> set[str]:
    listed = _run(["git", "ls-files", "--", *folders], REPO)
    assert listed.returncode == 0, listed.stderr
    return set(listed.stdout.split())


def test_the_package_holds_what_runs_in_azure_and_nothing_else(built: Path) -> None:
    names = _names(built)
    folder = built / "function-app"
    unpacked = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    assert unpacked == sorted(names), "func publish runs from the folder; it must be the zip"
    assert {name.split("/")[0] for name in names} == SHIPPED_TOP_LEVEL
    assert [n for n in names if any(marker in n for marker in DEV_MARKERS)] == []
    assert [n for n in names if "__pycache__" in n or n.endswith(".pyc") or ".egg-info" in n] == []
    # Every source of the app and of hastegeo is there, and so is what pip reads to build ./hastelib.
    missing = _tracked("api", "hastelib/src", "function_app.py", "host.json", "requirements.txt") - set(names)
    assert sorted(missing) == []
    project = tomllib.loads((REPO / "hastelib" / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert {"hastelib/pyproject.toml", f"hastelib/{project['readme']}"} <= set(names)
    # The development-only parts exist in the repository; the package leaves them out.
    assert _tracked("hastelib/dev/src/hastegeo_dev/devhost", "hastelib/dev/src/hastegeo_dev/testing")


def test_two_builds_are_byte_identical(built: Path, tmp_path: Path) -> None:
    again = _build(tmp_path / "again")
    assert (again / "function-app.zip").read_bytes() == (built / "function-app.zip").read_bytes()


@pytest.mark.parametrize(
    ("rules", "stripped"),
    [
        # The rules .funcignore had: unanchored, they matched hastelib/ too.
        ("*.md\npyproject.toml\n", ["hastelib/README.md", "hastelib/pyproject.toml"]),
        ("/hastelib/src/hastegeo/utils/\n", ["hastelib/src/hastegeo/utils/__init__.py"]),
        ("*.typed\n", ["hastelib/src/hastegeo/py.typed"]),
        ("hastelib/\n", ["hastelib/pyproject.toml"]),
        ("*.txt\n", ["requirements.txt"]),
        ("*.json\n", ["host.json"]),
        ("/*.py\n", ["function_app.py"]),
    ],
)
def test_ignore_rules_that_strip_a_file_the_remote_build_needs_are_refused(
    built: Path, tmp_path: Path, rules: str, stripped: list[str]
) -> None:
    root = tmp_path / "repo"
    shutil.copytree(built / "function-app", root)
    (root / ".funcignore").write_text(rules, encoding="utf-8")
    done = _run([sys.executable, "-m", "hastegeo_dev.package", "--root", str(root), "--out", str(tmp_path / "o")], REPO)
    assert done.returncode == 2, done.stdout + done.stderr
    for path in stripped:
        assert f"{path} (excluded by" in done.stderr
    assert not (tmp_path / "o" / "function-app.zip").exists(), "nothing is written when a needed file is missing"


def _index(python: Path | str, app_dir: Path) -> dict[str, Any]:
    done = _run([str(python), "-I", str(INDEX_SCRIPT)], app_dir, timeout=180)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _served(functions: list[dict[str, Any]]) -> dict[str, tuple[str, ...]]:
    """What a host serves, from an index: HTTP routes with methods and auth level, queues, timers."""
    served: dict[str, tuple[str, ...]] = {}
    for function in functions:
        trigger = function["trigger"]
        if trigger["type"] == "httpTrigger":
            served[function["name"]] = (
                "http",
                trigger.get("route") or function["name"],
                ",".join(trigger.get("methods", [])),
                trigger.get("authLevel", "function"),
            )
        elif trigger["type"] == "queueTrigger":
            served[function["name"]] = ("queue", trigger["queueName"])
        elif trigger["type"] == "timerTrigger":
            served[function["name"]] = ("timer", str(trigger["schedule"]))
        else:
            served[function["name"]] = ("other", trigger["type"])
    return served


@pytest.fixture(scope="module")
def wheelhouse(built: Path) -> Path:
    """Every wheel ``requirements.txt`` resolves to, plus ./hastelib's build requirements, from the registry.

    Downloaded once for a given requirements.txt and hastelib/pyproject.toml, so the clean install
    below is a real ``pip install -r requirements.txt`` that spends no time asking the index again.
    The folder holds third-party wheels only (``./hastelib`` is built by the install itself), and its
    name is the digest of everything that decides them, so checkouts running at once can share it:
    each downloads into a folder of its own and the first to finish publishes it.
    """
    pyproject = (REPO / "hastelib" / "pyproject.toml").read_bytes()
    digest = hashlib.sha256((REPO / "requirements.txt").read_bytes() + pyproject + sys.version.encode()).hexdigest()
    folder = WHEELHOUSES / digest[:16]
    if (folder / ".complete").exists():
        return folder
    partial = folder.with_name(f"{folder.name}.{os.getpid()}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    build_requires = tomllib.loads(pyproject.decode())["build-system"]["requires"]
    args = [sys.executable, "-m", "pip", "download", "--quiet", "-d", str(partial), "-r", "requirements.txt"]
    done = _run([*args, *build_requires], built / "function-app", timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    (partial / ".complete").touch()
    with contextlib.suppress(OSError):  # a folder is there: another checkout published it in between
        partial.rename(folder)  # atomic: the folder is there complete, or not at all
    shutil.rmtree(partial, ignore_errors=True)
    assert (folder / ".complete").exists(), folder
    return folder


@pytest.mark.slow
def test_the_package_installs_in_a_clean_venv_and_indexes_like_the_development_host(
    built: Path, wheelhouse: Path, tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    app_dir = tmp_path / "app"
    shutil.copytree(built / "function-app", app_dir)
    venv = tmp_path / "venv"
    made = _run([sys.executable, "-m", "venv", str(venv)], tmp_path)
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    # What the Flex Consumption remote build runs, in the unpacked package (wheels from the wheelhouse).
    # Without writing bytecode for every installed module (azure-ai-ml alone has thousands): pip never
    # fails an install on it, and the index below compiles what function_app imports.
    offline = ["--no-index", "--find-links", str(wheelhouse), "--no-compile"]
    installed = _run([str(python), "-m", "pip", "install", *offline, "-r", "requirements.txt"], app_dir, timeout=600)
    assert installed.returncode == 0, installed.stdout[-4000:] + installed.stderr[-4000:]

    deployed = _index(python, app_dir)
    assert Path(deployed["prefix"]).resolve() == venv.resolve()
    assert Path(deployed["hastegeo_file"]).resolve().is_relative_to(venv.resolve()), "hastegeo came from the venv"
    assert Path(deployed["function_app_file"]).resolve().parent == app_dir.resolve()
    assert deployed["imported_dev_modules"] == []
    assert all(deployed["package_data"].values()), deployed["package_data"]  # e.g. the shipped price table
    assert deployed["dev_importable"] == {"hastegeo_dev": False, "hastegeo.devhost": False, "hastegeo.testing": False}

    # The same index in the development venv, from the repository.
    development = _index(sys.executable, REPO)
    assert development["imported_dev_modules"] == [], "function_app never imports development-only code"
    assert deployed["functions"] == development["functions"]

    served = _served(deployed["functions"])
    kinds = {entry[0] for entry in served.values()}
    assert {"http", "queue", "timer"} <= kinds
    assert set(ALL_QUEUES) <= {entry[1] for entry in served.values() if entry[0] == "queue"}

    # What the development host serves from the same function_app (it indexes it too).
    host = discover(load_app("function_app:app", app_dir=REPO))
    from_host: dict[str, tuple[str, ...]] = {}
    for http in host.http:
        from_host[http.name] = ("http", http.route, ",".join(sorted(http.methods or ())), http.auth_level)
    for queue in host.queues:
        from_host[queue.name] = ("queue", queue.queue_name)
    for timer in host.timers:
        from_host[timer.name] = ("timer", timer.schedule)
    assert from_host == served


def test_every_deploy_path_ships_the_built_package() -> None:
    """azd packs the root with .funcignore after `make package` checked it; the workflow uploads the zip."""
    api = yaml.safe_load((REPO / "azure.yaml").read_text(encoding="utf-8"))["services"]["api"]
    assert api["project"] == "."
    assert api["remoteBuild"] is True
    assert api["hooks"]["prepackage"]["posix"]["run"] == "make package"
    workflow = (REPO / ".github" / "workflows" / "deploy.yml").read_text(encoding="utf-8")
    assert "make package" in workflow
    assert "--src dist/function-app.zip --build-remote true" in workflow
    assert ".python_packages" not in workflow, "the platform builds; nothing is pre-installed into the zip"
