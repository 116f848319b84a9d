"""A local workload says when its exit record is written, so its end is handled while it is still shutting down.

The host reads the word on a pipe and watches the process too (a pidfd): a workload that never says
it (killed, replaced by ``exec``, a child holding the pipe open) is reaped as before.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from azure.storage.blob import BlobServiceClient

from hastegeo.compute.context import BackendContext
from hastegeo.compute.contract import BlobLocation, ComputeJobSpec, ComputeState
from hastegeo.compute.local.adapter import LocalBackend, recorded
from hastegeo.compute.local_node.layout import NOTICE
from hastegeo.runtime import transfer_client
from hastegeo.settings.load import load_settings
from hastegeo.utils.files import read_json
from hastegeo_dev.devhost.azurite import Azurite
from tests.support.waiting import wait_for

pytestmark = pytest.mark.azurite

# A workload whose interpreter takes two seconds to shut down after its record (a module global's finaliser).
SLOW_TO_LEAVE = (
    "python",
    "-c",
    "import time\nclass Slow:\n    def __del__(self):\n        time.sleep(2)\nkept = Slow()\n",
)


def child(code: str, told: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", code, str(told)], pass_fds=(told,))


def test_the_word_on_the_pipe_is_heard_before_the_process_is_gone() -> None:
    notice, told = os.pipe()
    process = child(f"import os, sys, time; os.write(int(sys.argv[1]), {NOTICE!r}); time.sleep(2)", told)
    os.close(told)
    began = time.monotonic()
    assert recorded(process.pid, notice)
    assert time.monotonic() - began < 1.5
    assert process.poll() is None  # still there: the word came first
    process.wait()


@pytest.mark.parametrize(
    "code",
    [
        pytest.param("import sys; sys.exit(3)", id="ends-without-a-word"),
        # A forked child keeps the pipe open for ten seconds: the process's end must still be seen.
        pytest.param("import os, time, sys\nif os.fork() == 0:\n    time.sleep(10)\n", id="a-child-holds-the-pipe"),
        pytest.param(  # as the runner does for a command that is not Python
            "import os, sys; os.set_inheritable(int(sys.argv[1]), False); os.execvp('true', ['true'])", id="exec"
        ),
    ],
)
def test_no_word_is_a_process_that_ended_without_saying_so(code: str) -> None:
    notice, told = os.pipe()
    process = child(code, told)
    os.close(told)
    began = time.monotonic()
    assert not recorded(process.pid, notice)
    assert time.monotonic() - began < 5.0
    process.wait()


@pytest.fixture
def backend(tmp_path: Path) -> Iterator[tuple[LocalBackend, list[tuple[str, float]]]]:
    nudges: list[tuple[str, float]] = []
    with Azurite(in_memory=True) as azurite:
        blobs = BlobServiceClient.from_connection_string(azurite.connection_string)
        blobs.create_container("haste-outputs")
        settings = load_settings({"AzureWebJobsStorage": azurite.connection_string, "HASTE_LOCAL_ROOT": str(tmp_path)})
        context = BackendContext(
            settings=settings.backend("local"),
            blob_service=blobs,
            transfer_blobs=transfer_client(blobs, None),
            notify_exit=lambda job_id: nudges.append((job_id, time.time())),
        )
        yield LocalBackend(context, tmp_path, 2, sys.executable, 0), nudges


def test_a_workload_slow_to_shut_down_is_ended_as_soon_as_it_has_recorded(
    backend: tuple[LocalBackend, list[tuple[str, float]]], tmp_path: Path
) -> None:
    local, nudges = backend
    job = ComputeJobSpec(
        job_id="slow",
        name="haste-slow",
        workload="artifacts",
        entrypoint=SLOW_TO_LEAVE,
        output=BlobLocation(container="haste-outputs", path="jobs/slow"),
        time_limit_s=60,
    )
    handle = local.submit(job)
    wait_for(lambda: nudges, 30, "the nudge")
    nudged_at = nudges[0][1]
    ended = read_json(tmp_path / "jobs" / "haste-slow" / "state" / "exit.json")
    assert ended is not None
    assert ended["exitCode"] == 0
    assert nudged_at - datetime.fromisoformat(ended["endedAt"]).astimezone(UTC).timestamp() < 1.0
    assert local.status(handle).state is ComputeState.SUCCEEDED  # the record is the end, process or not
    running = read_json(tmp_path / "jobs" / "haste-slow" / "state" / "running.json")
    assert running is not None
    assert os.path.exists(f"/proc/{running['pid']}")  # still shutting down when its end was handled
    time.sleep(2.5)
    assert nudges == [("slow", nudged_at)]  # once: its exit does not nudge again


def test_a_nudge_that_fails_is_one_line_and_the_job_still_ends(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def refuse(job_id: str) -> None:
        raise RuntimeError("the pipeline's channel is closed")

    with Azurite(in_memory=True) as azurite:
        blobs = BlobServiceClient.from_connection_string(azurite.connection_string)
        settings = load_settings({"AzureWebJobsStorage": azurite.connection_string, "HASTE_LOCAL_ROOT": str(tmp_path)})
        context = BackendContext(
            settings=settings.backend("local"),
            blob_service=blobs,
            transfer_blobs=transfer_client(blobs, None),
            notify_exit=refuse,
        )
        local = LocalBackend(context, tmp_path, 1, sys.executable, 0)
        job = ComputeJobSpec(
            job_id="quick",
            name="haste-quick",
            workload="artifacts",
            entrypoint=("python", "-c", "pass"),
            output=BlobLocation(container="haste-outputs", path="jobs/quick"),
            time_limit_s=60,
        )
        with caplog.at_level(logging.WARNING, logger="hastegeo.compute.local.adapter"):
            handle = local.submit(job)
            wait_for(
                lambda: any("could not nudge" in r.getMessage() for r in caplog.records),
                30,
                "the failed nudge's log line",
            )
        assert local.status(handle).state is ComputeState.SUCCEEDED
    [line] = [r for r in caplog.records if "could not nudge" in r.getMessage()]
    assert line.getMessage() == (
        "could not nudge the pipeline for job quick (RuntimeError: the pipeline's channel is closed);"
        " its poll chain finds the end"
    )
    assert line.exc_info is None
