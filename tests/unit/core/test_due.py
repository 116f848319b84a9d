"""The due index's names (store/due.py): when the reconciler must read a job, and when a job has an entry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hastegeo.models.history import make_event
from hastegeo.models.ids import new_job_id
from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.store import due

T0 = datetime(2026, 12, 6, 10, 0, tzinfo=UTC)


def job(state: JobState = JobState.RUNNING, **fields: object) -> Job:
    base = Job(
        id=new_job_id(),
        project_id="p",
        workload="artifacts",
        state=state,
        requested_backend="auto",
        backend="local",
        created_at=T0,
        updated_at=T0,
        deadline_at=T0 + timedelta(days=1),
        history=[make_event(T0, state, "x", "t")],
    )
    return base.model_copy(update=fields)


def test_a_young_job_has_no_entry_so_a_short_job_never_writes_one() -> None:
    assert due.entry_name(job(poll_due_at=T0 + timedelta(seconds=60))) is None
    assert due.entry_name(job(JobState.QUEUED)) is None
    settled = job(poll_due_at=T0 + timedelta(seconds=due.SETTLE_S))
    assert due.entry_name(settled) == f"due/202612061010/{settled.id}"  # due + grace 300 s: 10:10
    assert due.entry_name(settled.model_copy(update={"state": JobState.SUCCEEDED})) is None


def test_a_live_chain_entry_is_never_due_and_moves_once_a_bucket() -> None:
    at = T0 + timedelta(hours=1)
    names, one = set(), job()
    for second in range(0, 600, 20):  # a chain polled every 20 s for ten minutes
        polled = at + timedelta(seconds=second)
        current = one.model_copy(update={"poll_due_at": polled + timedelta(seconds=20)})
        name = due.entry_name(current)
        assert name is not None
        assert name >= due.due_until(polled)  # not due while the chain is alive
        names.add(name)
    assert len(names) == 600 // due.GRID_S + 1  # one move per bucket, not one per poll


def test_the_entry_is_never_later_than_the_job_is_due() -> None:
    deadline = T0 + timedelta(hours=2, seconds=7)
    late = job(poll_due_at=T0 + timedelta(hours=3), deadline_at=deadline)
    assert due.look_at(late) == deadline
    name = due.entry_name(late)
    assert name is not None
    assert name < due.due_until(deadline)
    lost = job(poll_due_at=T0 + timedelta(hours=1))  # a chain whose message never came
    assert due.look_at(lost) == T0 + timedelta(hours=1, seconds=due.CHAIN_GRACE_S)
    quiet = job(JobState.QUEUED, updated_at=T0 + timedelta(hours=1))
    assert due.look_at(quiet) == T0 + timedelta(hours=1, seconds=due.QUIET_S)
    unkept = job(updated_at=T0 + timedelta(hours=1))  # running, no due time kept: due at once
    assert due.look_at(unkept) == unkept.updated_at


def test_buckets_sort_by_time_and_a_bucket_is_due_from_its_start() -> None:
    a, b = due.bucket(T0), due.bucket(T0 + timedelta(seconds=due.GRID_S))
    assert a < b
    assert f"due/{a}/x" < due.due_until(T0) < f"due/{b}/x"
    assert f"due/{a}/x" < due.due_until(T0 + timedelta(seconds=due.GRID_S - 1))
    assert due.job_of(f"due/{a}/job-1") == "job-1"
    assert due.bucket_of(f"due/{a}/job-1") == a
    assert due.GRID_S <= due.CHAIN_GRACE_S  # else a live chain's entry could come due


def test_a_waiting_job_has_its_entry_from_its_first_write_at_its_deadline() -> None:
    deadline = T0 + timedelta(days=30)
    waiting = job(JobState.QUEUED, waiting_for=["k1"], deadline_at=deadline)
    assert due.waiting(waiting)
    assert due.look_at(waiting) == deadline  # not 30 s after its last write, as a queued job's
    assert due.entry_name(waiting) == f"due/{due.bucket(deadline)}/{waiting.id}"
    released = waiting.model_copy(update={"waiting_for": [], "deadline_at": T0 + timedelta(hours=1)})
    assert not due.waiting(released)
    assert due.entry_name(released) is None  # released young: an ordinary queued job again


def test_a_job_stored_waiting_for_an_upstream_that_had_ended_badly_is_due_at_once() -> None:
    """Its acceptor ends it right after storing it; should the host die first, the next pass does (ADR 0047)."""
    doomed = job(JobState.QUEUED, waiting_for=["k1"], deadline_at=T0 + timedelta(days=30), release_due=True)
    assert due.look_at(doomed) == T0
    assert due.entry_name(doomed) == f"due/{due.bucket(T0)}/{doomed.id}"
    assert due.look_at(doomed.model_copy(update={"release_due": False})) == T0 + timedelta(days=30)


def test_an_end_with_followers_is_due_at_once_and_other_ends_keep_their_entry() -> None:
    end = T0 + timedelta(hours=2, seconds=40)
    ended = job(JobState.SUCCEEDED, updated_at=end)
    assert due.ended_entry(ended) is None
    upstream = ended.model_copy(update={"has_dependents": True})
    name = due.ended_entry(upstream)
    assert name == f"due/202612061200/{upstream.id}"
    assert name < due.due_until(end)  # the next pass reads it
    item = ended.model_copy(update={"group_id": "g1", "group_index": 0})
    assert due.ended_entry(item) == f"due/202612061200/{item.id}"
