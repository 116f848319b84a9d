"""``haste outputs --download``: fetch a job's outputs through their read URLs, resumably, verified.

Each output is written to ``<folder>/<name>.part`` and renamed to ``<name>`` only once its
size and sha256 match the job's record of it (which post-processing took from the workload's
manifest), so a file under its final name is always a verified one. An interrupted download
leaves the ``.part``; the next run hashes what is there and asks storage for the rest with a
``Range`` request. A file already present and matching is not fetched again.

Read URLs carry a signature: they are never printed, logged or put in an error message; an
error names the output and storage's host only.
"""

from __future__ import annotations

import hashlib
import http.client
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any, TextIO

from hastegeo.cli.exits import ExitCode, Failure, explain

CHUNK = 1 << 20
Opener = Callable[[urllib.request.Request], IO[bytes]]


@dataclass(frozen=True)
class Fetched:
    """What became of one output: ``downloaded``, ``resumed`` (from a .part) or ``present`` (already verified)."""

    name: str
    path: Path
    size: int
    sha256: str | None
    action: str

    def report(self) -> dict[str, Any]:
        return {"name": self.name, "path": str(self.path), "size": self.size, "sha256": self.sha256} | {
            "action": self.action
        }


class Progress:
    """One line on a terminal's stderr, rewritten as bytes arrive; silent elsewhere."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty()

    def update(self, name: str, done: int, total: int) -> None:
        if self.enabled:
            percent = 100 * done // total if total else 100
            bar = "#" * (percent // 5)
            self.stream.write(f"\r{name[-40:]:<40} [{bar:<20}] {percent:>3}% {done / 1e6:8.1f}/{total / 1e6:.1f} MB")
            self.stream.flush()

    def done(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()


def target_path(folder: Path, name: str) -> Path:
    """Where output ``name`` goes under ``folder``; a name that would leave the folder is refused."""
    parts = PurePosixPath(name).parts
    if not parts or PurePosixPath(name).is_absolute() or any(part in ("..", "") for part in parts) or "\\" in name:
        raise Failure(ExitCode.UNAVAILABLE, f"the API named an output {name!r}, which is not a path inside a folder")
    return folder.joinpath(*parts)


def download_outputs(
    outputs: list[dict[str, Any]],
    folder: Path,
    *,
    opener: Opener | None = None,
    progress: Progress | None = None,
) -> Iterator[Fetched]:
    """Download every output that carries a ``url`` into ``folder``, yielding each as it is verified."""
    open_url: Opener = opener or (lambda request: urllib.request.urlopen(request, timeout=60))  # noqa: S310
    for record in outputs:
        yield _download(record, folder, open_url, progress or Progress())


def _sha256(path: Path) -> hashlib._Hash:
    digest = hashlib.sha256()
    with path.open("rb") as data:
        for chunk in iter(lambda: data.read(CHUNK), b""):
            digest.update(chunk)
    return digest


def _matches(path: Path, size: int, sha256: str | None) -> bool:
    return path.is_file() and path.stat().st_size == size and (sha256 is None or _sha256(path).hexdigest() == sha256)


def _download(record: dict[str, Any], folder: Path, open_url: Opener, progress: Progress) -> Fetched:
    name, size, expected = str(record["name"]), int(record["size"]), record.get("sha256")
    final = target_path(folder, name)
    if _matches(final, size, expected):
        return Fetched(name, final, size, expected, "present")
    part = final.with_name(final.name + ".part")
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        offset = part.stat().st_size if part.is_file() else 0
        if offset > size:
            part.unlink()
            offset = 0
        digest = _sha256(part) if offset else hashlib.sha256()
        action = "resumed" if offset else "downloaded"
        if offset < size:
            offset, digest = _fetch(record, part, offset, size, digest, open_url, progress)
        elif not part.exists():
            part.touch()
        progress.done()
    except OSError as exc:
        if getattr(exc, "filename", None) is None:
            raise
        raise Failure(ExitCode.USAGE, f"cannot write {exc.filename}: {exc.strerror}") from exc
    if offset != size or (expected is not None and digest.hexdigest() != expected):
        part.unlink(missing_ok=True)
        raise Failure(
            ExitCode.UNAVAILABLE,
            f"{name} does not match the job's manifest (size {offset}, expected {size}; sha256 checked: "
            f"{expected is not None}); the partial file was removed, run the command again",
        )
    part.replace(final)
    return Fetched(name, final, size, expected, action)


def _fetch(
    record: dict[str, Any],
    part: Path,
    offset: int,
    size: int,
    digest: hashlib._Hash,
    open_url: Opener,
    progress: Progress,
) -> tuple[int, hashlib._Hash]:
    """Append the rest of the blob from ``offset`` to ``part``; answer the new length and running hash."""
    name, url = str(record["name"]), record.get("url")
    if not url:
        raise Failure(ExitCode.UNAVAILABLE, f"the API gave no read URL for {name}")
    host = urllib.parse.urlsplit(url).netloc
    request = urllib.request.Request(url, headers={"Range": f"bytes={offset}-"} if offset else {})  # noqa: S310
    try:
        with open_url(request) as response:
            if offset and getattr(response, "status", 206) != 206:  # the range was ignored: start again
                offset, digest = 0, hashlib.sha256()
            with part.open("ab" if offset else "wb") as sink:
                for chunk in iter(lambda: response.read(CHUNK), b""):
                    sink.write(chunk)
                    digest.update(chunk)
                    offset += len(chunk)
                    progress.update(name, offset, size)
    except urllib.error.HTTPError as exc:
        code = ExitCode.NOT_FOUND if exc.code == 404 else ExitCode.UNAVAILABLE
        hint = "; the read URL may have expired, run the command again" if exc.code == 403 else ""
        raise Failure(code, f"storage ({host}) answered HTTP {exc.code} for {name}{hint}") from None
    except (OSError, http.client.HTTPException) as exc:
        if isinstance(exc, OSError) and getattr(exc, "filename", None) is not None:
            raise
        failure = explain(exc, f"storage ({host})") or Failure(ExitCode.UNAVAILABLE, f"reading {name} failed")
        failure.message, failure.lines = f"{name}: {failure.message}; run the command again to resume", []
        raise failure from exc
    return offset, digest
