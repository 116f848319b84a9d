"""Files written whole: a reader sees the old content or the new, never half of it.

Each writer goes to a temporary sibling whose name is unique to its process and
thread and ends in ``.tmp`` (manifests skip such names), then renames it over the
target, which is atomic on one file system; a failed write leaves no temporary
behind. Standard library only: every local job's process imports it
(:mod:`hastegeo.compute.local_node.layout`) and must start fast.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A temporary path to write ``path``'s new content to; renamed over ``path`` if the block succeeds."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        yield temporary
        temporary.replace(path)
    finally:
        temporary.unlink(missing_ok=True)


def write_bytes(path: Path, data: bytes) -> None:
    with replacing(path) as temporary:
        temporary.write_bytes(data)


def write_text(path: Path, text: str) -> None:
    with replacing(path) as temporary:
        temporary.write_text(text, encoding="utf-8")


def write_json(path: Path, document: dict[str, Any]) -> None:
    """``document`` as compact JSON, creating the folder first (state files of the local backend)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, json.dumps(document))


def read_json(path: Path) -> dict[str, Any] | None:
    """The JSON object at ``path``, or None when there is none (missing, not JSON, or not an object)."""
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return loaded if isinstance(loaded, dict) else None


def sha256_file(path: Path) -> str:
    """The file's SHA-256, hex, read a MiB at a time (outputs' manifests and checkpoint copies both check it)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
