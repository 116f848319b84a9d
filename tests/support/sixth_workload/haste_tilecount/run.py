"""The tilecount workload, on compute: counts the files under ``inputs/`` and their bytes."""

from __future__ import annotations

import json
from typing import Any

from hastegeo.workloads._run.harness import ProgressLog, Workdir, iter_files, run_main, write_manifest
from hastegeo.workloads._run.params import read_params

from .params import TilecountParams

WORKLOAD = "tilecount"


def count(workdir: Workdir, params: dict[str, Any], progress: ProgressLog) -> None:
    suffix = read_params(TilecountParams, params, progress).suffix
    files = [path for path in iter_files(workdir.inputs) if path.name.endswith(suffix)]
    summary = {"files": len(files), "bytes": sum(path.stat().st_size for path in files)}
    progress.step(f"counted {summary['files']} file(s), {summary['bytes']} bytes")
    workdir.output_path("count.json").write_text(json.dumps(summary, sort_keys=True), encoding="utf-8")
    write_manifest(workdir, WORKLOAD, extra={"summary": summary})


def main() -> int:
    return run_main(WORKLOAD, count)
