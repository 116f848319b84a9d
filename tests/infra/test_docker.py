"""The compute images: lint what can be linted without a Docker engine, and run the entry point.

No Docker daemon runs here, so the images are never built in tests; the Dockerfiles
are checked for pinning and a non-root user, and the entry point script (plain sh)
is executed with a stand-in ``python`` to prove the workdir contract.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from hastegeo.workflows.runtime import LEGACY_WORKDIR_VARIABLE, WORKDIR_VARIABLE
from tests.drift.conftest import REPO

DOCKER = REPO / "infra" / "docker"
IMAGES = ("geo", "train")
ENTRYPOINT = DOCKER / "entrypoint.sh"
SH = shutil.which("sh")


def pins(path: Path) -> dict[str, str]:
    found = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^([A-Za-z0-9_.\-]+)==([^\s;#]+)", line.strip())
        if match:
            found[match.group(1).lower()] = match.group(2)
    return found


@pytest.mark.parametrize("image", IMAGES)
def test_dockerfile_is_pinned_non_root_and_uses_the_entrypoint(image: str) -> None:
    text = (DOCKER / image / "Dockerfile").read_text(encoding="utf-8")
    froms = re.findall(r"^FROM\s+(\S+)", text, re.MULTILINE)
    assert froms, image
    for base in froms:
        assert re.search(r":[\w.\-]+@sha256:[0-9a-f]{64}$", base), f"{image}: base {base} is not pinned by digest"
    users = re.findall(r"^USER\s+(\S+)", text, re.MULTILINE)
    assert users, f"{image}: no USER"
    assert users[-1].split(":")[0] not in ("root", "0"), f"{image}: runs as root"
    assert 'ENTRYPOINT ["/usr/local/bin/haste-entrypoint"]' in text
    for source in re.findall(r"^COPY\s+(?:--\S+\s+)*(\S+)\s", text, re.MULTILINE):
        assert (REPO / source).exists(), f"{image}: COPY source {source} is missing (context = repository root)"


@pytest.mark.parametrize("image", IMAGES)
def test_image_requirements_are_pinned_like_the_development_environment(image: str) -> None:
    requirements = DOCKER / image / "requirements.txt"
    for line in requirements.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "-r ")):
            assert "==" in line, f"{requirements}: {line} is not pinned"
    dev = pins(REPO / "requirements-dev.txt")
    for name, version in pins(requirements).items():
        if name in dev:
            assert dev[name] == version, f"{name}: image pins {version}, development pins {dev[name]}"


def test_entrypoint_is_valid_sh() -> None:
    if SH is None:
        pytest.skip("no sh on this machine")
    subprocess.run([SH, "-n", str(ENTRYPOINT)], check=True)


@pytest.fixture
def fake_python(tmp_path: Path) -> Path:
    """A ``python`` that prints its arguments, the workdir variable and its cwd."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "python"
    script.write_text(f'#!/bin/sh\necho "argv=$*"\necho "workdir=${WORKDIR_VARIABLE}"\necho "cwd=$(pwd)"\n')
    script.chmod(0o755)
    return bin_dir


def run_entrypoint(args: list[str], env: dict[str, str], bin_dir: Path) -> subprocess.CompletedProcess[str]:
    if SH is None:
        pytest.skip("no sh on this machine")
    base = {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "HASTE_WORKLOADS": "imagery embedding"}
    return subprocess.run(
        [SH, str(ENTRYPOINT), *args], env={**base, **env}, capture_output=True, text=True, timeout=10, check=False
    )


def test_entrypoint_runs_the_workload_module_in_the_workdir(fake_python: Path, tmp_path: Path) -> None:
    result = run_entrypoint(["imagery", "--flag"], {WORKDIR_VARIABLE: str(tmp_path)}, fake_python)
    assert result.returncode == 0, result.stderr
    assert "argv=-m hastegeo.workflows.imagery --flag" in result.stdout
    assert f"cwd={tmp_path}" in result.stdout


def test_entrypoint_accepts_the_batch_variable_as_alias(fake_python: Path, tmp_path: Path) -> None:
    result = run_entrypoint(["embedding"], {LEGACY_WORKDIR_VARIABLE: str(tmp_path)}, fake_python)
    assert result.returncode == 0, result.stderr
    assert f"workdir={tmp_path}" in result.stdout


def test_entrypoint_prefers_the_neutral_variable(fake_python: Path, tmp_path: Path) -> None:
    neutral = tmp_path / "neutral"
    neutral.mkdir()
    env = {WORKDIR_VARIABLE: str(neutral), LEGACY_WORKDIR_VARIABLE: str(tmp_path)}
    result = run_entrypoint(["imagery"], env, fake_python)
    assert f"workdir={neutral}" in result.stdout


def test_entrypoint_passes_other_commands_through(fake_python: Path, tmp_path: Path) -> None:
    """Batch runs `/bin/sh -c '…'` as the task command; the entry point must not swallow it."""
    result = run_entrypoint(["sh", "-c", f"echo ok ${WORKDIR_VARIABLE}"], {LEGACY_WORKDIR_VARIABLE: "/w"}, fake_python)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok /w"


def test_entrypoint_refuses_a_workload_of_the_other_image_and_a_missing_workdir(fake_python: Path) -> None:
    wrong = run_entrypoint(["training"], {WORKDIR_VARIABLE: "/tmp"}, fake_python)
    assert wrong.returncode == 64
    assert "does not run in this image" in wrong.stderr
    missing = run_entrypoint(["imagery"], {}, fake_python)
    assert missing.returncode == 64
    assert WORKDIR_VARIABLE in missing.stderr
