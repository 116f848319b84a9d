"""Where a workload finds its working directory: every branch of ``resolve_workdir``, and a real process.

Images built for Batch's conventions read only ``AZ_BATCH_TASK_WORKING_DIR``;
newer ones read ``HASTE_JOB_WORKDIR``. Every backend exports both (Batch in its
command line, Azure ML in the job's environment variables), and the workload
runtime accepts either, preferring the project's own name.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hastegeo.workdir import workdir_env
from hastegeo.workloads._run.harness import LEGACY_WORKDIR_VARIABLE, WORKDIR_VARIABLE, WorkloadError, resolve_workdir
from tests.support.imports import modules_loaded_by, not_standard_library


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        pytest.param({WORKDIR_VARIABLE: "/jobs/new"}, "/jobs/new", id="project-name"),
        pytest.param({LEGACY_WORKDIR_VARIABLE: "/jobs/legacy"}, "/jobs/legacy", id="legacy-alias-only"),
        pytest.param(
            {WORKDIR_VARIABLE: "/jobs/new", LEGACY_WORKDIR_VARIABLE: "/jobs/legacy"},
            "/jobs/new",
            id="both-prefers-ours",
        ),
        pytest.param(
            {WORKDIR_VARIABLE: "", LEGACY_WORKDIR_VARIABLE: "/jobs/legacy"}, "/jobs/legacy", id="empty-ours-uses-alias"
        ),
    ],
)
def test_resolve_workdir_from_a_mapping(environ: dict[str, str], expected: str) -> None:
    assert resolve_workdir(environ) == Path(expected)


@pytest.mark.parametrize(
    "environ",
    [
        pytest.param({}, id="neither"),
        pytest.param({WORKDIR_VARIABLE: "", LEGACY_WORKDIR_VARIABLE: ""}, id="both-empty"),
        pytest.param({"HOME": "/root"}, id="unrelated-only"),
    ],
)
def test_resolve_workdir_without_a_directory_names_the_variable(environ: dict[str, str]) -> None:
    with pytest.raises(WorkloadError, match=f"^{WORKDIR_VARIABLE} is not set$"):
        resolve_workdir(environ)


def test_resolve_workdir_reads_the_process_environment_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(WORKDIR_VARIABLE, raising=False)
    monkeypatch.setenv(LEGACY_WORKDIR_VARIABLE, "/jobs/from-process")
    assert resolve_workdir() == Path("/jobs/from-process")
    monkeypatch.delenv(LEGACY_WORKDIR_VARIABLE)
    with pytest.raises(WorkloadError):
        resolve_workdir()


def test_the_workload_runtime_reads_the_names_the_backends_export_and_stays_standard_library() -> None:
    # One definition for both sides (hastegeo.workdir), which imports only the standard library.
    assert workdir_env("/w") == {WORKDIR_VARIABLE: "/w", LEGACY_WORKDIR_VARIABLE: "/w"}
    loaded = not_standard_library(modules_loaded_by("import hastegeo.workloads._run.harness"))
    assert sorted(name for name in loaded if not name.startswith("hastegeo")) == []


# What an older image does: it sets up only the legacy variable and runs a workload through run_main.
OLD_IMAGE_WORKLOAD = """
import sys
from hastegeo.workloads._run.harness import run_main, write_manifest

def body(workdir, params, progress):
    (workdir.outputs / "hello.txt").write_text("hi " + params.get("who", "?"))
    progress.step("wrote hello.txt")
    write_manifest(workdir, "legacy")

sys.exit(run_main("legacy", body))
"""


def test_a_process_that_sees_only_the_legacy_alias_runs_in_that_directory(tmp_path: Path) -> None:
    (tmp_path / "params.json").write_text('{"who": "batch"}')
    env = {k: v for k, v in os.environ.items() if k not in (WORKDIR_VARIABLE, LEGACY_WORKDIR_VARIABLE)}
    env[LEGACY_WORKDIR_VARIABLE] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", OLD_IMAGE_WORKLOAD], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "outputs" / "hello.txt").read_text() == "hi batch"
    assert (tmp_path / "outputs" / "legacy_manifest.json").exists()
    assert "wrote hello.txt" in (tmp_path / "logs" / "legacy_progress.log").read_text()


def test_a_process_with_neither_variable_exits_2_with_the_reason(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in (WORKDIR_VARIABLE, LEGACY_WORKDIR_VARIABLE)}
    done = subprocess.run(
        [sys.executable, "-c", OLD_IMAGE_WORKLOAD],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == f"error: {WORKDIR_VARIABLE} is not set"
    assert list(tmp_path.iterdir()) == []  # nothing written anywhere it could find
