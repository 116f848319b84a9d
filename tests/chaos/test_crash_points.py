"""Crashes at the worst moments, in process: the step dies right after a side effect it has
not recorded yet, the message comes back, and the job still ends once, run once, told once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hastegeo.pipeline.accept import parse_request
from hastegeo.runtime import Runtime
from hastegeo.store.queues import JobMessage
from hastegeo.workloads.artifacts.processor import ArtifactsProcessor
from tests.conftest import RuntimeFactory

from . import ground_truth
from .checks import assert_clean, check_jobs
from .conftest import CHAOS_JOBS, Outcome
from .ground_truth import Scene, starts_env

pytestmark = [pytest.mark.azurite]
BODY = {"workload": "artifacts", "projectId": "p1", "inputs": [{"blob": "p1/a.txt"}]}


class Crash(BaseException):
    """The process dying: not an Exception, so nothing on the way up handles it."""


@pytest.fixture
def runtime(make_runtime: RuntimeFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Runtime:
    for name, value in starts_env(tmp_path / "starts").items():  # the workloads inherit this process's environment
        monkeypatch.setenv(name, value)
    built = make_runtime(HASTE_LOCAL_SLOTS="4")
    built.blobs.get_container_client(built.settings.storage.inputs_container).upload_blob("p1/a.txt", b"alpha")
    return built


def crash_once_after(target: Any, name: str, key: Callable[..., str]) -> set[str]:
    """Make ``target.name`` crash right after doing its work, once per job (``key`` names the job)."""
    return crash_once(target, name, key, before=False)


def crash_once(
    target: Any, name: str, key: Callable[..., str], *, before: bool, only: set[str] | None = None
) -> set[str]:
    """Make ``target.name`` crash once per key (of those in ``only``), before or after doing its work;
    the keys it crashed for."""
    original: Callable[..., Any] = getattr(target, name)
    crashed: set[str] = set()

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        which = key(*args, **kwargs)
        dies = which not in crashed and (only is None or which in only)
        if dies and before:
            crashed.add(which)
            raise Crash(name)
        result = original(*args, **kwargs)
        if dies:
            crashed.add(which)
            raise Crash(name)
        return result

    setattr(target, name, wrapper)
    return crashed


def deliver(step: Callable[[JobMessage], None], message: JobMessage) -> None:
    """Deliver until a delivery survives (the queue would redeliver a crashed one)."""
    for _ in range(5):
        try:
            step(message)
            return
        except Crash:
            continue
    raise AssertionError("still crashing after 5 deliveries")


def verify(runtime: Runtime, outcome: Outcome, tmp_path: Path) -> None:
    """Ground truth; the queues are the session's, shared with other tests, so they are not judged here."""
    scene = Scene(
        runtime.blobs,
        runtime.settings.storage.jobs_container,
        local_root=tmp_path / "local",
        starts_dir=tmp_path / "starts",
    )
    ground_truth.check(outcome, scene)
    ground_truth.assert_true(outcome)


def finish(runtime: Runtime, ids: list[str]) -> None:
    import time

    # Fails when no job has ended for a minute (stuck), not when a busy machine makes many jobs slow.
    last, ended = time.monotonic(), 0
    while (done := sum(runtime.store.get(i).state.terminal for i in ids)) < len(ids):
        if done > ended:
            last, ended = time.monotonic(), done
        assert time.monotonic() - last < 60, f"{len(ids) - done} job(s) not terminal, none ended for a minute"
        for job_id in ids:
            job = runtime.store.get(job_id)
            if not job.state.terminal:
                deliver(runtime.poll.handle, JobMessage(job_id=job_id, kind="poll", poll_seq=job.poll_seq))
        time.sleep(0.05)


def test_crash_between_provider_submit_and_handle_persistence(
    runtime: Runtime, tmp_path: Path, outcome: Outcome
) -> None:
    ids = [runtime.acceptor.accept(parse_request(BODY)).job.id for _ in range(CHAOS_JOBS)]
    crashed = crash_once_after(runtime.deps.service, "submit", key=lambda backend, spec: spec.job_id)
    for job_id in ids:
        deliver(runtime.submit.handle, JobMessage(job_id=job_id, kind="submit"))
    assert crashed == set(ids)  # every job's first submit died after the provider accepted it
    finish(runtime, ids)
    check_jobs(outcome, [runtime.store.get(i).api_view() for i in ids], tmp_path / "local")
    assert outcome.succeeded == len(ids), outcome.notes
    assert_clean(outcome)
    verify(runtime, outcome, tmp_path)


def test_crash_during_post_processing(runtime: Runtime, tmp_path: Path, outcome: Outcome) -> None:
    ids = [runtime.acceptor.accept(parse_request(BODY)).job.id for _ in range(CHAOS_JOBS)]
    for job_id in ids:
        deliver(runtime.submit.handle, JobMessage(job_id=job_id, kind="submit"))
    # A processor of this runtime's own: the registered one is shared by every runtime in the process.
    processor = runtime.deps.processors["artifacts"] = ArtifactsProcessor()
    crashed = crash_once_after(processor, "postprocess", key=lambda job, *rest: job.id)
    finish(runtime, ids)
    assert crashed == set(ids)  # every job's post-processing died once after doing its reads
    check_jobs(outcome, [runtime.store.get(i).api_view() for i in ids], tmp_path / "local")
    assert outcome.succeeded == len(ids), outcome.notes
    assert_clean(outcome)
    verify(runtime, outcome, tmp_path)


def test_crash_right_after_accepting(runtime: Runtime, tmp_path: Path, outcome: Outcome) -> None:
    """The job is stored, the submit message never sent: a retry with the same key finds it,
    and the reconciler re-sends its message once it has been quiet."""
    crashed = crash_once_after(runtime.store, "create", key=lambda job: job.id)
    with pytest.raises(Crash):
        runtime.acceptor.accept(parse_request(BODY), idempotency_key="retry-me")
    again = runtime.acceptor.accept(parse_request(BODY), idempotency_key="retry-me")
    assert crashed == {again.job.id}
    assert not again.created  # the client's retry is answered with the stored job, not a second one
    assert [j.id for j in runtime.store.list("p1").jobs] == [again.job.id]
    # The submit message the crash lost is what the reconciler re-sends (tests/integration/test_reconcile.py).
    deliver(runtime.submit.handle, JobMessage(job_id=again.job.id, kind="submit"))
    finish(runtime, [again.job.id])
    check_jobs(outcome, [runtime.store.get(again.job.id).api_view()], tmp_path / "local")
    assert outcome.succeeded == 1
    assert_clean(outcome)
    verify(runtime, outcome, tmp_path)
