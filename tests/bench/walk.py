"""How often one poll step calls back into a file it is still in (``python -m tests.bench.walk``).

A reader following a step through the code pays for every call that goes back into a file
still open further up the stack: a write that leaves the store for a hook, the hook for the
pipeline and the pipeline for the store again reads as a knot. This walks the poll step that
sees a job's provider job end and takes it to its end (post-processing, the ending write, its
events, its admission seat and the hand-over of that seat to the next job in line) and counts
those calls. Only the library's own files count (``hastegeo``): the SDKs and the standard
library are not what a reader walks.

The job runs on the local backend with one seat (``HASTE_BACKEND_MAX_RUNNING=local=1``)
and a second job waiting for it, against an Azurite of its own, the steps driven in this
process the way the Functions host drives them.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from hastegeo.pipeline.accept import parse_request
from hastegeo.store.queues import POLL_QUEUE, SUBMIT_QUEUE, JobMessage
from tests.support.imports import LIBRARY
from tests.support.runtime import development_runtime

ROOT = str(LIBRARY)


@dataclass
class Walk:
    """The library files a step entered, and the calls that went back into a file still open up the stack."""

    files: list[str] = field(default_factory=list)
    knots: list[tuple[str, str]] = field(default_factory=list)  # (from, back into)

    def call(self, frame: FrameType) -> None:
        callee = frame.f_code.co_filename
        if not callee.startswith(ROOT):
            return
        if not self.files or self.files[-1] != callee:
            self.files.append(callee)
        open_files = []
        caller = frame.f_back
        while caller is not None:
            if caller.f_code.co_filename.startswith(ROOT):
                open_files.append(caller.f_code.co_filename)
            caller = caller.f_back
        if open_files and open_files[0] != callee and callee in open_files[1:]:
            self.knots.append((open_files[0], callee))

    @property
    def distinct(self) -> int:
        return len(set(self.files))


def walked(walk: Walk, step: Callable[[JobMessage], None]) -> Callable[[JobMessage], None]:
    """``step`` that records its walk (in the calling thread and any thread it starts meanwhile)."""

    def profiler(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            walk.call(frame)

    def run(message: JobMessage) -> None:
        threading.setprofile(profiler)
        sys.setprofile(profiler)
        try:
            step(message)
        finally:
            sys.setprofile(None)
            threading.setprofile(None)  # type: ignore[arg-type]

    return run


def deliver(runtime: Any, queue: str, handle: Callable[[JobMessage], None], wait_s: float) -> bool:
    client = runtime.queues.client(queue)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        for message in client.receive_messages(max_messages=1, visibility_timeout=30):
            handle(JobMessage.model_validate_json(message.content))
            client.delete_message(message)
            return True
        time.sleep(0.05)
    return False


def walk_ending_poll(connection_string: str, workdir: Path) -> Walk:
    """The walk of the poll step that ends the first of two jobs sharing one seat."""
    from hastegeo.settings.load import load_settings

    settings = load_settings(
        {
            "AzureWebJobsStorage": connection_string,
            "HASTE_LOCAL_ROOT": str(workdir / "local"),
            "HASTE_POLL_INITIAL_S": "1",
            "HASTE_OTEL_EXPORT": "off",
            "HASTE_BACKEND_MAX_RUNNING": "local=1",
        }
    )

    runtime = development_runtime(settings)
    try:
        runtime.blobs.get_container_client(settings.storage.inputs_container).upload_blob(
            "walk/input.txt", b"x" * 512, overwrite=True
        )
        for queue in (SUBMIT_QUEUE, POLL_QUEUE):
            runtime.queues.client(queue).clear_messages()
        request = {"workload": "artifacts", "projectId": "walk", "inputs": [{"blob": "walk/input.txt"}]}
        first = runtime.acceptor.accept(parse_request(request), idempotency_key="walk-1").job
        deliver(runtime, SUBMIT_QUEUE, runtime.submit.handle, 10)
        runtime.acceptor.accept(parse_request(request), idempotency_key="walk-2")
        deliver(runtime, SUBMIT_QUEUE, runtime.submit.handle, 10)  # held: the one seat is taken
        deadline = time.monotonic() + 60
        walk = Walk()
        while not runtime.store.get(first.id).state.terminal:  # the last step walked is the one that ended it
            walk = Walk()
            deliver(runtime, POLL_QUEUE, walked(walk, runtime.poll.handle), 0.5)
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {first.id} did not end")
        return walk
    finally:
        for adapter in runtime.registry.built().values():
            adapter.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--knots", action="store_true", help="print each call back into an open file")
    args = parser.parse_args()
    from hastegeo_dev.devhost.azurite import Azurite

    with tempfile.TemporaryDirectory(prefix="haste-walk-") as tmp, Azurite(in_memory=True) as azurite:
        walk = walk_ending_poll(azurite.connection_string, Path(tmp))

    def short(name: str) -> Path:
        return Path(name).relative_to(LIBRARY.parent)

    if args.knots:
        for caller, callee in walk.knots:
            print(f"{short(caller)} -> back into {short(callee)}")
    entries, files, knots = len(walk.files), walk.distinct, len(walk.knots)
    print(f"the poll step that ends a job: {files} files, {entries} file entries, {knots} calls back into an open file")
    return 0


if __name__ == "__main__":
    sys.exit(main())
