"""What every workload shares on compute: its working directory, progress log and manifest.

This module runs inside the workload process on every backend, so it
imports only the standard library (and :mod:`hastegeo.utils.files`, which
does too). The layout is the cross-backend contract:

    $HASTE_JOB_WORKDIR/
        inputs/       staged by the backend before the workload starts
        outputs/      uploaded to <output prefix>/outputs/ when the task ends
        logs/         uploaded to <output prefix>/logs/ (progress log included)
        checkpoints/  $HASTE_CHECKPOINT_DIR: copied to <output prefix>/checkpoints/ while the job
                      runs and put back before its next attempt (``run_main(checkpoints=True)``)
        params.json   the workload's parameters, if the backend wrote them;
                      otherwise they arrive as JSON in $HASTE_PARAMS_JSON

``AZ_BATCH_TASK_WORKING_DIR`` is accepted as an alias so images built for
Batch's conventions keep working.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hastegeo.checkpoints.layout import DIR_VARIABLE, RESTORED_VARIABLE
from hastegeo.utils.files import sha256_file, write_text
from hastegeo.utils.redaction import redact
from hastegeo.workdir import LEGACY_WORKDIR_VARIABLE, WORKDIR_VARIABLE

if TYPE_CHECKING:
    from hastegeo.checkpoints.agent import CheckpointAgent

PARAMS_FILE = "params.json"
PARAMS_VARIABLE = "HASTE_PARAMS_JSON"


class WorkloadError(Exception):
    """A readable reason the workload cannot finish; printed as the last log line."""


def resolve_workdir(environ: dict[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    value = env.get(WORKDIR_VARIABLE) or env.get(LEGACY_WORKDIR_VARIABLE)
    if not value:
        raise WorkloadError(f"{WORKDIR_VARIABLE} is not set")
    return Path(value)


@dataclass(frozen=True)
class Workdir:
    root: Path

    @property
    def inputs(self) -> Path:
        return self.root / "inputs"

    @property
    def outputs(self) -> Path:
        return self.root / "outputs"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def checkpoints(self) -> Path:
        """Where the workload saves state to resume from (``$HASTE_CHECKPOINT_DIR``; docs/workloads.md)."""
        return Path(os.environ.get(DIR_VARIABLE) or self.root / "checkpoints")

    def prepare(self) -> Workdir:
        for folder in (self.inputs, self.outputs, self.logs, self.checkpoints):
            folder.mkdir(parents=True, exist_ok=True)
        return self

    def params(self) -> dict[str, Any]:
        path = self.root / PARAMS_FILE
        text = path.read_text(encoding="utf-8") if path.exists() else os.environ.get(PARAMS_VARIABLE, "") or "{}"
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError as exc:
            raise WorkloadError(f"parameters are not valid JSON: {exc}") from None
        if not isinstance(loaded, dict):
            raise WorkloadError(f"{PARAMS_FILE} must hold a JSON object")
        return loaded

    def output_path(self, relative: str) -> Path:
        """A path under outputs/, refusing anything that would escape it."""
        target = (self.outputs / relative).resolve()
        if not target.is_relative_to(self.outputs.resolve()):
            raise WorkloadError(f"output name {relative!r} escapes outputs/")
        return target


class ProgressLog:
    """One timestamped, human-readable line per step, flushed at once.

    The pipeline tails this file (``logs/<workload>_progress.log``) into the
    job's status history while the job runs, and copies what is left after it
    ends. Each line starts with the UTC time to the millisecond
    (``2026-01-01T12:00:00.250Z step 2 of 5``): the history shows that time,
    not the time the line was copied.
    """

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._file = path.open("a", encoding="utf-8")

    def step(self, message: str) -> None:
        stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        line = " ".join(message.split())
        self._file.write(f"{stamp} {line}\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def iter_files(folder: Path) -> Iterator[Path]:
    """Every file under ``folder``, sorted, following linked folders.

    Azure ML mounts each input elsewhere and links it into ``inputs/``; ``rglob`` would not
    descend into a linked folder, so a chained job's inputs would look empty there.
    """
    found = [Path(root, name) for root, _, names in os.walk(folder, followlinks=True) for name in names]
    for path in sorted(found):
        if path.is_file():
            yield path


def write_manifest(workdir: Workdir, workload: str, extra: dict[str, Any] | None = None) -> Path:
    """Write ``outputs/<workload>_manifest.json`` listing every other output with size and sha256.

    Written last and atomically (temp file + rename), so its presence means
    the outputs it lists are complete.
    """
    manifest_name = f"{workload}_manifest.json"
    files = [
        {
            "name": path.relative_to(workdir.outputs).as_posix(),
            "size": path.stat().st_size,
            "sha256": sha256_file(path),
        }
        for path in iter_files(workdir.outputs)
        if path.name != manifest_name and not path.name.endswith(".tmp")
    ]
    document = {
        "workload": workload,
        "createdAt": datetime.now(UTC).isoformat(),
        "files": files,
        **(extra or {}),
    }
    target = workdir.outputs / manifest_name
    write_text(target, json.dumps(document, indent=2, sort_keys=True))
    return target


def restored_from() -> str | None:
    """What the runtime put back in the checkpoint folder before the workload started, in words
    (``the checkpoint of attempt 1``); None when it started empty."""
    return os.environ.get(RESTORED_VARIABLE) or None


def start_checkpoints(workdir: Workdir) -> CheckpointAgent | None:
    """Put the latest checkpoint back, start copying the folder, and copy it at once on SIGTERM.

    None when the job names no checkpoint location or storage cannot be reached (the workload then
    starts from nothing, which is always correct, only slower). Imports the storage SDK only here.
    """
    folder = workdir.checkpoints
    os.environ[DIR_VARIABLE] = str(folder)
    folder.mkdir(parents=True, exist_ok=True)
    try:
        from hastegeo.checkpoints.agent import CheckpointAgent

        agent = CheckpointAgent.from_environ(folder)
        if agent is None:
            return None
        restored = agent.restore()
        if restored:
            os.environ[RESTORED_VARIABLE] = restored  # for restored_from(), and for commands the workload runs
    except Exception as exc:
        reason = redact(f"{type(exc).__name__}: {exc}")  # stderr reaches the history: no key or signature in it
        print(f"checkpoints: not restored or copied: {reason}", file=sys.stderr, flush=True)
        return None
    agent.start()
    previous = signal.getsignal(signal.SIGTERM)

    def on_stop(signum: int, frame: Any) -> None:
        signal.signal(signum, signal.SIG_IGN)  # one copy, however many notices arrive
        agent.sync()  # the node is going (a preemption notice) or the job was cancelled: copy now
        if callable(previous):
            previous(signum, frame)
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_stop)
    return agent


def run_main(workload: str, body: Any, *, checkpoints: bool = False) -> int:
    """Run ``body(workdir, params, progress)``; turn a :class:`WorkloadError` into exit code 2.

    The last line on stderr is the readable reason the pipeline shows. With ``checkpoints``, the
    checkpoint folder is restored first and copied while ``body`` runs (:func:`start_checkpoints`).
    """
    started = time.monotonic()
    try:
        workdir = Workdir(resolve_workdir()).prepare()
    except WorkloadError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    progress = ProgressLog(workdir.logs / f"{workload}_progress.log")
    agent = start_checkpoints(workdir) if checkpoints else None
    try:
        progress.step(f"{workload} started")
        body(workdir, workdir.params(), progress)
        progress.step(f"{workload} finished in {time.monotonic() - started:.1f}s")
        return 0
    except WorkloadError as exc:
        progress.step(f"{workload} failed: {exc}")
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        if agent is not None:
            agent.close()
        progress.close()
