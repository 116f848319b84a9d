"""The poll cadence (ADR 0041): a job's poll delay grows with its age up to its backend's longest delay."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hastegeo.compute.contract import ComputeJobHandle
from hastegeo.models.history import make_event
from hastegeo.models.ids import new_job_id
from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.pipeline.chain import PollChain
from hastegeo.settings.load import load_settings

T0 = datetime(2026, 12, 6, 10, 0, tzinfo=UTC)
SETTINGS = load_settings({"AzureWebJobsStorage": "UseDevelopmentStorage=true", "AML_POLL_MAX_S": "900"})


def on(backend: str) -> Job:
    return Job(
        id=new_job_id(),
        project_id="p",
        workload="artifacts",
        state=JobState.RUNNING,
        requested_backend="auto",
        backend=backend,
        created_at=T0,
        updated_at=T0,
        started_at=T0,
        deadline_at=T0 + timedelta(days=1),
        handle=ComputeJobHandle(backend=backend, provider_ids={"job": "x"}, submitted_at=T0),
        history=[make_event(T0, JobState.RUNNING, "x", "t")],
    )


def delays(backend: str, minutes: list[float]) -> list[float]:
    now = [T0]
    chain = PollChain(None, SETTINGS.pipeline, lambda: now[0], SETTINGS.poll_max_s)  # type: ignore[arg-type]
    found = []
    for minute in minutes:
        now[0] = T0 + timedelta(minutes=minute)
        found.append(chain.delay(3, on(backend)))
    return found


def test_each_backend_owns_its_longest_delay() -> None:
    assert SETTINGS.poll_max_s("azure_batch") == 600
    assert SETTINGS.poll_max_s("azure_ml") == 900  # AML_POLL_MAX_S
    assert SETTINGS.poll_max_s("local") == SETTINGS.pipeline.poll_max_s  # HASTE_POLL_MAX_S: seconds


def test_the_delay_grows_with_age_up_to_the_backends_longest() -> None:
    assert delays("azure_batch", [0, 2, 10, 20, 60, 600]) == [6.75, 60.0, 300.0, 600.0, 600.0, 600.0]
    assert delays("azure_ml", [10, 30, 600]) == [300.0, 900.0, 900.0]
    assert delays("local", [0, 10, 600]) == [6.75, 60.0, 60.0]  # 2 s × 1.5³ first


def test_without_a_job_the_delay_is_the_chains_own() -> None:
    chain = PollChain(None, SETTINGS.pipeline, lambda: T0, SETTINGS.poll_max_s)  # type: ignore[arg-type]
    assert [chain.delay(seq) for seq in (0, 1, 20)] == [2.0, 3.0, 60.0]


def test_after_ten_minutes_a_batch_job_costs_at_most_one_storage_call_a_minute() -> None:
    """5 storage calls a poll (ADR 0026) and up to 2 a poll to move the job's due entry (ADR 0041)."""
    now, polls = 10 * 60.0, 0
    while now < 70 * 60:
        now += delays("azure_batch", [now / 60])[0]
        polls += 1
    assert polls * (5 + 2) / 60 <= 1.0, polls
