"""The artifacts workload as compute runs it (a real ``python -m`` process): parameters and member names."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any


def run_artifacts(
    root: Path, files: dict[str, bytes], params: dict[str, Any], module: str = "hastegeo.workloads.artifacts"
) -> subprocess.CompletedProcess[str]:
    for name, data in files.items():
        target = root / "inputs" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    (root / "params.json").write_text(json.dumps(params))
    env = {k: v for k, v in os.environ.items() if not k.startswith("HASTE_")}
    return subprocess.run(
        [sys.executable, "-m", module],
        env={**env, "HASTE_JOB_WORKDIR": str(root)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_packages_with_the_requested_level(tmp_path: Path) -> None:
    result = run_artifacts(tmp_path, {"a/one.txt": b"1" * 1000, "two.txt": b"2"}, {"compressLevel": 0})
    assert result.returncode == 0, result.stderr
    with zipfile.ZipFile(tmp_path / "outputs" / "artifacts.zip") as archive:
        assert [(i.filename, i.compress_type) for i in archive.infolist()] == [
            ("a/one.txt", zipfile.ZIP_STORED),
            ("two.txt", zipfile.ZIP_STORED),
        ]


def test_the_module_compute_ran_before_workload_folders_still_packages(tmp_path: Path) -> None:
    """A provider job submitted before the upgrade runs ``python -m hastegeo.workflows.artifacts`` (ADR 0037)."""
    result = run_artifacts(tmp_path, {"one.txt": b"1"}, {}, module="hastegeo.workflows.artifacts")
    assert result.returncode == 0, result.stderr
    assert (
        json.loads((tmp_path / "outputs" / "artifacts_manifest.json").read_text())["archived"][0]["name"] == "one.txt"
    )


def test_a_level_given_as_a_string_or_a_bool_fails_naming_the_parameter(tmp_path: Path) -> None:
    for index, level in enumerate(("6", True, 6.0)):
        root = tmp_path / f"job{index}"
        result = run_artifacts(root, {"a.txt": b"a"}, {"compressLevel": level})
        assert result.returncode == 2
        assert result.stderr.strip().splitlines()[-1].startswith("error: parameter 'compressLevel': ")
        assert not (root / "outputs" / "artifacts.zip").exists()


def test_a_member_is_never_named_with_a_newline(tmp_path: Path) -> None:
    """A staged file named ``x\\n`` fails the run, naming it; no archive and no manifest are written."""
    result = run_artifacts(tmp_path, {"good.txt": b"g", "x\n": b"x"}, {})
    assert result.returncode == 2
    assert "input 'x\\n' has a control character in its name" in result.stderr
    assert not (tmp_path / "outputs" / "artifacts.zip").exists()
    assert not (tmp_path / "outputs" / "artifacts_manifest.json").exists()
