"""What a checkpoint is in blob storage, and the names every backend shares. Pure; standard library only.

Under a job's prefix (``<outputs container>/jobs/<job id>/checkpoints``)::

    sets/000003-a2/<file>...   one complete copy of the folder, never written again once committed
    latest.json                the pointer: which set is the latest complete one, written LAST

A reader follows the pointer and nothing else, so a copy that dies half-way leaves a set nobody
points to, and the set the pointer names is intact. The pointer lists every file with its size
and sha256: a restore that does not find exactly those bytes puts nothing back.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

FORMAT_VERSION = 1
POINTER = "latest.json"
SETS = "sets"
CHECKPOINTS = "checkpoints"  # the folder under the job's working directory, and under its blob prefix

DIR_VARIABLE = "HASTE_CHECKPOINT_DIR"  # where the workload saves its state (every backend sets it)
BLOB_VARIABLE = "HASTE_CHECKPOINT_BLOB"  # <container>/<prefix>: this job's copy
RESUME_VARIABLE = "HASTE_CHECKPOINT_RESUME_FROM"  # <container>/<prefix>: another job's copy (a rerun)
CONNECTION_VARIABLE = "HASTE_CHECKPOINT_CONNECTION_STRING"  # the node's storage access, where no identity is
ACCOUNT_URL_VARIABLE = "HASTE_CHECKPOINT_ACCOUNT_URL"  # with IDENTITY_VARIABLE: a managed identity's access
IDENTITY_VARIABLE = "HASTE_CHECKPOINT_IDENTITY"  # a user-assigned identity's resource id, or COMPUTE_IDENTITY
COMPUTE_IDENTITY = "compute"  # the identity the compute gives its jobs (Azure ML's cluster identity)
COMPUTE_CLIENT_ID_VARIABLE = "DEFAULT_IDENTITY_CLIENT_ID"  # Azure ML sets it: the cluster's user-assigned identity
INTERVAL_VARIABLE = "HASTE_CHECKPOINT_INTERVAL_S"  # seconds between periodic copies
RESTORED_VARIABLE = "HASTE_CHECKPOINT_RESTORED"  # set for the workload: what was put back, in words
DEFAULT_INTERVAL_S = 300.0
MIN_INTERVAL_S = 0.05  # shorter, the copying thread would do little but list the folder


class CheckpointFormatError(ValueError):
    """A pointer that is not this format: treated as no checkpoint, never half-used."""


@dataclass(frozen=True)
class FileEntry:
    name: str  # relative to the checkpoint folder, '/'-separated
    size: int
    sha256: str


@dataclass(frozen=True)
class Pointer:
    """The latest complete set: its number, the attempt and job that wrote it, and its files."""

    sequence: int
    attempt: int
    job_id: str
    files: tuple[FileEntry, ...]
    written_at: str

    @property
    def set_name(self) -> str:
        return set_name(self.sequence, self.attempt)

    def to_json(self) -> bytes:
        document = {
            "formatVersion": FORMAT_VERSION,
            "sequence": self.sequence,
            "attempt": self.attempt,
            "jobId": self.job_id,
            "set": self.set_name,
            "writtenAt": self.written_at,
            "files": [{"name": f.name, "size": f.size, "sha256": f.sha256} for f in self.files],
        }
        return json.dumps(document, sort_keys=True).encode()

    @classmethod
    def from_json(cls, data: bytes) -> Pointer:
        """Raises CheckpointFormatError for anything but a complete pointer of this format."""
        try:
            document = json.loads(data)
            if document["formatVersion"] != FORMAT_VERSION:
                raise CheckpointFormatError(f"checkpoint format {document['formatVersion']!r} is not supported")
            files = tuple(
                FileEntry(check_name(str(f["name"])), int(f["size"]), str(f["sha256"])) for f in document["files"]
            )
            return cls(
                int(document["sequence"]),
                int(document["attempt"]),
                str(document["jobId"]),
                files,
                str(document["writtenAt"]),
            )
        except CheckpointFormatError:
            raise
        except (ValueError, KeyError, TypeError) as exc:
            raise CheckpointFormatError(f"the checkpoint pointer is not readable: {exc}") from None


def set_name(sequence: int, attempt: int) -> str:
    return f"{sequence:06d}-a{attempt}"


def check_name(name: str) -> str:
    """A file name inside the folder; anything that could land outside it raises CheckpointFormatError."""
    parts = name.split("/")
    if not name or name.startswith("/") or any(part in ("", ".", "..") for part in parts) or "\\" in name:
        raise CheckpointFormatError(f"checkpoint file name {name!r} is not a plain relative path")
    return name


def split_location(value: str) -> tuple[str, str]:
    """``container/a/b`` -> (``container``, ``a/b``); raises ValueError for anything without both."""
    container, _, prefix = value.strip("/").partition("/")
    if not container or not prefix:
        raise ValueError(f"{value!r} is not <container>/<prefix>")
    return container, prefix


def location(container: str, job_prefix: str) -> str:
    """The checkpoint location of a job whose outputs are under ``container/job_prefix``."""
    return f"{container}/{job_prefix.rstrip('/')}/{CHECKPOINTS}"


def is_partial(path: Path) -> bool:
    """A file being written (``*.tmp``, the atomic-write convention) is never part of a set."""
    return path.name.endswith(".tmp")


def files_in(folder: Path) -> list[Path]:
    """Every complete file under ``folder``, sorted by name."""
    if not folder.is_dir():
        return []
    found = [Path(root, name) for root, _, names in os.walk(folder) for name in names]
    return sorted(path for path in found if path.is_file() and not is_partial(path))


def signature(folder: Path) -> tuple[tuple[str, int, int], ...]:
    """Cheap change detection (name, size, mtime): a periodic look hashes nothing."""
    result = []
    for path in files_in(folder):
        try:
            stat = path.stat()
        except FileNotFoundError:  # replaced between the listing and the look: the next look sees it
            continue
        result.append((path.relative_to(folder).as_posix(), stat.st_size, stat.st_mtime_ns))
    return tuple(result)


def describe(pointer: Pointer, own_job: str) -> str:
    """``the checkpoint of attempt 1``, or of another job's attempt (a rerun that resumes)."""
    if pointer.job_id == own_job:
        return f"the checkpoint of attempt {pointer.attempt}"
    return f"the checkpoint of job {pointer.job_id}, attempt {pointer.attempt}"
