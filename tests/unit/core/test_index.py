"""The names of the job index's entries (pure): their order is the listing's, each names its
job's position and state, and a reader tells a stale entry from one a create is still writing."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.store import index
from hastegeo.store.cursor import Position
from tests.support.jobs import job_document

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
GRACE_S = 600.0


def job(state: JobState = JobState.QUEUED, *, project: str = "p1") -> Job:
    return job_document(NOW, state, project_id=project)


def entry(name: str, position: Position, last_modified: datetime | None = NOW) -> index.Entry:
    return index.Entry(name=name, position=position, etag="e", last_modified=last_modified)


def listed(prefix: str, *positions: Position) -> Iterator[index.Entry]:
    return iter([entry(prefix + index.sort_key(p), p) for p in positions])


def test_entry_names_sort_like_the_listing_newest_first_then_by_id() -> None:
    # Times of very different magnitudes: the names must still sort as the numbers do.
    positions = [
        Position(5, "b"),
        Position(index.EPOCH_MAX_MS - 1, "a"),
        Position(1_700_000_000_000, "b"),
        Position(1_700_000_000_000, "a"),
        Position(1, "a"),
        Position(123_456, "z"),
        Position(4_102_444_800_000, "c"),  # 2100-01-01
    ]
    listing = sorted(positions, key=lambda p: (-p.created_ms, p.job_id))
    assert sorted(positions, key=index.sort_key) == listing
    assert all(len(index.sort_key(p).partition("-")[0]) == 13 for p in positions)


def test_an_entry_name_gives_back_the_position_it_was_made_from() -> None:
    in_2100 = Position(4_102_444_800_000, "z")
    for position in (
        Position(1, "a"),
        Position(1_764_763_200_000, "0198-ab-c"),
        in_2100,
        Position(index.EPOCH_MAX_MS - 1, "z"),
    ):
        assert index.parse(f"active/p1/{index.sort_key(position)}", "active/p1/") == position
    assert index.position_of(job()) == Position(int(NOW.timestamp() * 1000), "j-1")
    assert index.created_ms(NOW + timedelta(milliseconds=7)) == int(NOW.timestamp() * 1000) + 7


def test_a_job_has_a_project_entry_and_one_entry_for_its_state() -> None:
    key = index.sort_key(index.position_of(job()))
    for state in (JobState.QUEUED, JobState.RUNNING, JobState.CANCEL_REQUESTED):
        assert index.entry_names(job(state)) == (f"index/p1/{key}", f"active/p1/{key}")
    for state in (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED):
        assert index.entry_names(job(state)) == (f"index/p1/{key}", f"ended/p1/{state.value}/{key}")
    assert index.project_of_active(f"active/p-7/{key}") == "p-7"


def test_a_listing_reads_the_entries_its_filter_needs_and_no_others() -> None:
    assert index.prefixes("p1", None) == ["index/p1/"]
    assert index.prefixes("p1", frozenset({JobState.RUNNING, JobState.QUEUED})) == ["active/p1/"]
    assert index.prefixes("p1", frozenset({JobState.SUCCEEDED, JobState.FAILED})) == [
        "ended/p1/failed/",
        "ended/p1/succeeded/",
    ]
    assert index.prefixes("p1", frozenset({JobState.CANCELLED, JobState.RUNNING})) == [
        "active/p1/",
        "ended/p1/cancelled/",
    ]
    assert index.prefixes("p1", frozenset()) == []


def test_merged_listings_keep_the_order_and_name_each_job_once() -> None:
    old, mid, new = Position(1_000, "a"), Position(2_000, "a"), Position(3_000, "b")
    # A job that just ended may still have its active entry beside its ended one.
    # Each listing parses its own names: the two entries of one job hold equal, not identical, positions.
    merged = index.merge([listed("active/p1/", new, mid), listed("ended/p1/failed/", Position(2_000, "a"), old)])
    assert [e.position for e in merged] == [new, mid, old]
    assert [e.position for e in index.merge([listed("active/p1/", new), iter([])])] == [new]


def test_an_entry_matches_only_its_own_document_in_a_wanted_state() -> None:
    running = job(JobState.RUNNING)
    here = entry("active/p1/x", index.position_of(running))
    assert index.matches(here, running, "p1", None)
    assert index.matches(here, running, "p1", frozenset({JobState.RUNNING}))
    assert not index.matches(here, running, "p1", frozenset({JobState.QUEUED}))
    assert not index.matches(here, None, "p1", None)
    assert not index.matches(here, running, "p2", None)
    theirs = job(JobState.RUNNING, project="p2")
    assert not index.matches(entry("active/p2/x", index.position_of(theirs)), theirs, "p1", None)
    # The project of a listing comes from a request: equal to the document's, never the same object.
    assert index.matches(here, running, "".join(["p", "1"]), None)
    elsewhere = entry("active/p1/x", Position(here.position.created_ms + 1, running.id))
    assert not index.matches(elsewhere, running, "p1", None)


def test_an_entry_without_its_document_is_stale_only_past_the_grace() -> None:
    position = Position(1_000, "j-1")
    name = f"active/p1/{index.sort_key(position)}"
    for age_s in (0, 1, GRACE_S):
        assert not index.stale(entry(name, position, NOW), None, NOW + timedelta(seconds=age_s), GRACE_S)
    assert index.stale(entry(name, position, NOW), None, NOW + timedelta(seconds=GRACE_S + 1), GRACE_S)
    assert not index.stale(entry(name, position, None), None, NOW + timedelta(days=9), GRACE_S)


def test_an_entry_is_stale_once_its_document_can_never_match_it_again() -> None:
    def stale(prefix: str, document: Job, position: Position | None = None) -> bool:
        at = position or index.position_of(document)
        return index.stale(entry(prefix + index.sort_key(at), at), document, NOW, GRACE_S)

    assert stale("active/p1/", job(JobState.RUNNING), Position(1, "j-1"))  # the document is elsewhere
    assert not stale("active/p1/", job(JobState.RUNNING))
    assert stale("active/p1/", job(JobState.FAILED))
    assert not stale("ended/p1/failed/", job(JobState.FAILED))
    assert stale("ended/p1/failed/", job(JobState.SUCCEEDED))
    # Written before the document moved (a crash between them): the move may still come.
    assert not stale("ended/p1/failed/", job(JobState.RUNNING))
    assert not stale("index/p1/", job(JobState.FAILED))
