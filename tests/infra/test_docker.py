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

from hastegeo.workloads._run.harness import LEGACY_WORKDIR_VARIABLE, WORKDIR_VARIABLE
from tests.drift.conftest import REPO
from tests.infra import dockerignore

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
    assert "argv=-m hastegeo.workloads.imagery --flag" in result.stdout
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
    # No list of names to keep: a workload added as a folder is refused the same way by an image without it.
    sixth = run_entrypoint(["tilecount"], {WORKDIR_VARIABLE: "/tmp"}, fake_python)
    assert sixth.returncode == 64
    assert "workload tilecount does not run in this image (it runs: imagery embedding)" in sixth.stderr
    missing = run_entrypoint(["imagery"], {}, fake_python)
    assert missing.returncode == 64
    assert WORKDIR_VARIABLE in missing.stderr


# ---- any builder, and only what the images need in the build context

# Docker's reference marks these as BuildKit (Dockerfile frontend) only; the classic builder, which
# `az acr build` may use, refuses them or reads a heredoc's body as instructions.
BUILDKIT_ONLY = re.compile(r"--(chmod|link|mount|parents|exclude|checksum|keep-git-dir|network|security)\b|<<")
DOCKERFILES = sorted(DOCKER.glob("**/Dockerfile*"))


def instructions(path: Path) -> list[str]:
    """The Dockerfile's instructions, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", path.read_text(encoding="utf-8"))
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_every_dockerfile_is_found() -> None:
    assert {path.parent.name for path in DOCKERFILES} >= set(IMAGES)


@pytest.mark.parametrize("path", DOCKERFILES, ids=lambda p: p.parent.name)
def test_dockerfile_uses_only_what_the_classic_builder_accepts(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert not re.search(r"^#\s*syntax\s*=", text, re.MULTILINE | re.IGNORECASE), f"{path}: BuildKit frontend"
    for line in instructions(path):
        found = BUILDKIT_ONLY.search(line)
        assert found is None, f"{path}: {found.group(0) if found else ''} needs BuildKit: {line}"


def copied_sources(path: Path) -> list[str]:
    sources = []
    for line in instructions(path):
        words = line.split()
        if words[0].upper() in ("COPY", "ADD") and not any(w.startswith("--from") for w in words):
            sources += [w for w in words[1:-1] if not w.startswith("--")]
    return sources


def tracked(prefix: str) -> list[str]:
    listed = subprocess.run(["git", "ls-files", "--", prefix], cwd=REPO, capture_output=True, text=True, check=True)
    return listed.stdout.split()


IGNORE_FILE = REPO / ".dockerignore"
RULES = dockerignore.parse(IGNORE_FILE.read_text(encoding="utf-8")) if IGNORE_FILE.exists() else []


@pytest.mark.parametrize(
    "path",
    [
        ".venv/lib/python3.11/site-packages/azure/core/__init__.py",
        "node_modules/eslint/package.json",
        ".git/HEAD",
        "hastelib/build/lib/hastegeo/__init__.py",
        "hastelib/dist/hastegeo-0.1.0.tar.gz",
        "hastelib/dev/src/hastegeo_dev/__init__.py",
        "hastelib/src/hastegeo.egg-info/PKG-INFO",
        "hastelib/src/hastegeo/__pycache__/auth.cpython-311.pyc",
        "hastelib/.mypy_cache/3.11/cache.db",
        ".pytest_cache/v/cache/nodeids",
        ".ruff_cache/CACHEDIR.TAG",
        "dist/function-app.zip",
        "tests/conftest.py",
        "docs/deploy.md",
        "local.settings.json",
    ],
)
def test_the_build_context_leaves_out(path: str) -> None:
    assert RULES, "no .dockerignore: `az acr build .` uploads the whole checkout"
    assert dockerignore.excluded(RULES, path), path


@pytest.mark.parametrize("path", DOCKERFILES, ids=lambda p: p.parent.name)
def test_the_build_context_holds_what_each_dockerfile_copies(path: Path) -> None:
    assert RULES
    for source in copied_sources(path):
        files = tracked(source)
        assert files, f"{path}: COPY {source} matches no tracked file"
        if source.rstrip("/") == "hastelib":
            files = [f for f in files if not f.startswith("hastelib/dev/")]
        missing = [f for f in files if dockerignore.excluded(RULES, f)]
        assert not missing, f"{path}: COPY {source} but .dockerignore leaves out {missing[:5]}"


def test_the_build_context_of_this_checkout_is_the_images_files_alone() -> None:
    """Walk this checkout as Docker would (.venv, node_modules and caches included when present)."""
    assert RULES
    sent = list(dockerignore.context(REPO, RULES))
    assert sent
    outside = [f for f in sent if not f.startswith(("hastelib/", "infra/docker/"))]
    assert not outside, outside[:10]
    assert not [f for f in sent if "__pycache__" in f or ".egg-info" in f or f.startswith("hastelib/dev/")]


def test_dockerignore_matching_follows_docker_rules() -> None:
    rules = dockerignore.parse("# comment\n/a/*.txt\n**/tmp\n!a/keep.txt\nb?/c\n\\!x\n")
    assert dockerignore.excluded(rules, "a/x.txt")
    assert not dockerignore.excluded(rules, "a/keep.txt")
    assert not dockerignore.excluded(rules, "a/sub/x.txt")
    assert dockerignore.excluded(rules, "tmp/f")
    assert dockerignore.excluded(rules, "q/r/tmp/f")
    assert dockerignore.excluded(rules, "b1/c/deep")
    assert not dockerignore.excluded(rules, "b12/c")
    assert dockerignore.excluded(rules, "!x")


# ---- the same context as `az acr build` reads .dockerignore (its own rules, not Docker's)


def test_az_acr_build_sends_the_same_context_as_docker() -> None:
    """The images are built by `az acr build .`, which packs the context with the Azure CLI's own reading."""
    text = IGNORE_FILE.read_text(encoding="utf-8")
    by_acr = set(dockerignore.acr_context(REPO, text))
    by_docker = set(dockerignore.context(REPO, RULES))
    assert by_acr == by_docker, {
        "only az acr build": sorted(by_acr - by_docker)[:10],
        "only docker": sorted(by_docker - by_acr)[:10],
    }
    for path in DOCKERFILES:
        for source in copied_sources(path):
            files = [f for f in tracked(source) if not f.startswith("hastelib/dev/")]
            missing = [f for f in files if f not in by_acr]
            assert not missing, f"{path}: COPY {source} but `az acr build` leaves out {missing[:5]}"


def test_the_acr_reading_is_the_azure_clis(tmp_path: Path) -> None:
    """A trailing slash never matches there, and an ignored folder is still walked for exceptions."""
    for name in ("keep/a.txt", "keep/dev/b.txt", "drop/c.txt", "top.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x", encoding="utf-8")
    slashed = "*\n!keep/\nkeep/dev/\n"
    assert set(dockerignore.acr_context(tmp_path, slashed)) == set(), "`!keep/` reopens nothing for az"
    assert set(dockerignore.context(tmp_path, dockerignore.parse(slashed))) == {"keep/a.txt"}, "but does for Docker"
    plain = "*\n!keep\nkeep/dev\n"
    assert set(dockerignore.acr_context(tmp_path, plain)) == {"keep/a.txt"}
    assert set(dockerignore.context(tmp_path, dockerignore.parse(plain))) == {"keep/a.txt"}


def test_the_dockerignore_has_no_rule_the_two_readings_take_differently() -> None:
    text = IGNORE_FILE.read_text(encoding="utf-8")
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]
    assert not [line for line in lines if line.endswith("/") or line.lstrip("!").startswith("/")], (
        "a trailing or leading slash: `az acr build` never matches it"
    )
