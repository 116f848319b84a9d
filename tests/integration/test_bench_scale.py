"""``make bench-scale`` at a small size: the seeding fast path writes jobs the store reads
back as its own, and the bench measures what it says (not part of the timing goal)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hastegeo.models.states import JobState
from tests.bench import scale_bench
from tests.bench.azurite_seed import append_blobs

pytestmark = [pytest.mark.azurite, pytest.mark.slow]


def test_seeded_jobs_are_read_back_as_the_store_wrote_them(tmp_path: Path) -> None:
    location = tmp_path / "azurite"
    azurite, runtime = scale_bench.start(location)
    try:
        live = scale_bench.job_at(scale_bench.T0, JobState.QUEUED)
        assert runtime.store.create(live)  # Azurite writes the first blob: the template
        azurite.stop()
        blobs = list(scale_bench.finished_blobs(30, 0))
        assert append_blobs(location, runtime.settings.storage.jobs_container, iter(blobs)) == 90
        azurite, runtime = scale_bench.start(location)
        store = runtime.store
        ended = store.list(scale_bench.PROJECT, states=frozenset({JobState.SUCCEEDED}), page_size=100)
        assert len(ended.jobs) == 30
        assert all(job.state is JobState.SUCCEEDED for job in ended.jobs)
        assert [u.job_id for u in runtime.journal.sweep()] == [live.id]
        assert len(store.list(scale_bench.PROJECT, page_size=100).jobs) == 31
        store.update(live.id, lambda j: j.model_copy(update={"state": JobState.CANCELLED}))  # Azurite writes on
        assert store.get(live.id).state is JobState.CANCELLED
    finally:
        azurite.stop()


def test_the_bench_reports_every_operation_with_its_storage_calls(tmp_path: Path) -> None:
    results = scale_bench.run([20, 60], repeat=2, workdir=tmp_path)  # calls are those of the last run
    assert sorted(results) == [20, 60]
    for size in results.values():
        assert set(size) == {
            "reconciler pass",
            "first page",
            "first page, state=running",
            "one read",
            "project costs, a month",
        }
        assert size["one read"][2] == 1
        # One month: one read of its totals and one listing of its markers (jobs ended since the last pass:
        # ADR 0051).
        assert size["project costs, a month"][2] == 2
        # Steady state (a poll due time ahead, each job in the due index): the due listing finds nothing due,
        # the census lists a page of active and of due entries and reads no job (each has its entry), then the
        # capacity board is read and written once (ADR 0023, ADR 0041), the open groups listed once
        # (ADR 0040), and the totals' markers listed once (ADR 0051): whatever the number of jobs.
        assert size["reconciler pass"][2] == 1 + 2 + 2 + 1 + 1
    # The cost in calls does not grow with the finished jobs.
    assert {name: r[2] for name, r in results[20].items()} == {name: r[2] for name, r in results[60].items()}
