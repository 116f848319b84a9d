"""Package the staged inputs into ``outputs/artifacts.zip`` with a manifest.

Runs on compute: ``python -m hastegeo.workloads.artifacts``. The backend has
staged the blobs (or earlier jobs' outputs) into ``inputs/``; this zips
them deterministically (sorted names, fixed timestamps) so the same inputs
give the same archive.
"""

from __future__ import annotations

import zipfile
from typing import Any

from hastegeo.utils.files import sha256_file
from hastegeo.workloads._run.harness import (
    ProgressLog,
    Workdir,
    WorkloadError,
    iter_files,
    run_main,
    write_manifest,
)
from hastegeo.workloads._run.params import read_params
from hastegeo.workloads.artifacts.params import ArtifactsParams

WORKLOAD = "artifacts"
_FIXED_TIME = (2000, 1, 1, 0, 0, 0)


def _check_member_name(name: str) -> None:
    """Refuse a file whose name holds a control character (a newline, say) rather than archive it under it.

    Such a name would split lines in listings and logs downstream; failing
    with the name shown loses nothing, where skipping the file would.
    """
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in name):
        raise WorkloadError(f"input {name!r} has a control character in its name; it cannot be archived")


def package(workdir: Workdir, params: dict[str, Any], progress: ProgressLog) -> None:
    level = read_params(ArtifactsParams, params, progress).compress_level
    files = list(iter_files(workdir.inputs))
    if not files:
        raise WorkloadError("no input files were staged into inputs/")
    for path in files:
        _check_member_name(path.relative_to(workdir.inputs).as_posix())
    progress.step(f"packaging {len(files)} file(s)")
    target = workdir.output_path("artifacts.zip")
    archived = []
    method = zipfile.ZIP_DEFLATED if level > 0 else zipfile.ZIP_STORED
    with zipfile.ZipFile(target, "w", compression=method, compresslevel=level or None) as archive:
        for index, path in enumerate(files, start=1):
            name = path.relative_to(workdir.inputs).as_posix()
            info = zipfile.ZipInfo(name, date_time=_FIXED_TIME)
            info.compress_type = method
            with path.open("rb") as source, archive.open(info, "w") as sink:
                while chunk := source.read(1 << 20):
                    sink.write(chunk)
            archived.append({"name": name, "size": path.stat().st_size, "sha256": sha256_file(path)})
            if index % 50 == 0 or index == len(files):
                progress.step(f"archived {index}/{len(files)} files")
    write_manifest(workdir, WORKLOAD, {"archived": archived})
    progress.step(f"wrote artifacts.zip ({target.stat().st_size} bytes)")


def main() -> int:
    return run_main(WORKLOAD, package)
