"""What every chaos scenario checks at the end, whatever the fault was."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from hastegeo_dev.devhost.azurite import ACCOUNT_KEY

from .conftest import Outcome

# Events that must appear exactly once in a finished job's history.
# Once per backend for a submission: a job moved to another backend was submitted to each (pipeline/failover.py).
ONCE = (r"^submitted to \w+", r"^workload finished", r"^succeeded with ", r"^failed: ", r"^cancelled")
SECRET = re.compile(r"(?<![A-Za-z0-9_])sig=(?!\[REDACTED\])|AccountKey=|Bearer [A-Za-z0-9]")


def check_jobs(outcome: Outcome, jobs: list[dict[str, Any]], local_root: Path | None) -> None:
    """Fill ``outcome`` from the final jobs (API views) and the local backend's launch logs."""
    outcome.jobs = len(jobs)
    outcome.terminal = sum(1 for job in jobs if job["state"] in ("succeeded", "failed", "cancelled"))
    outcome.succeeded = sum(1 for job in jobs if job["state"] == "succeeded")
    for job in jobs:
        if job["state"] != "succeeded":
            outcome.notes.append(f"{job['id']}: {job['state']}: {job.get('reason')}")
        messages = [event["message"] for event in job["history"]]
        for pattern in ONCE:
            matching = [found.group(0) for m in messages if (found := re.search(pattern, m))]
            if len(matching) > len(set(matching)):
                outcome.duplicates += len(matching) - len(set(matching))
                outcome.notes.append(f"{job['id']}: {matching}")
        states = [event["state"] for event in job["history"]]
        if job["state"] == "succeeded":
            for needed in ("queued", "running", "postprocessing", "succeeded"):
                if needed not in states:
                    outcome.lost_events += 1
                    outcome.notes.append(f"{job['id']}: no {needed} event")
        text = str(job)
        if SECRET.search(text) or ACCOUNT_KEY in text:
            outcome.leaks += 1
        if local_root is not None and job.get("handle"):
            launches = local_root / "jobs" / f"haste-{job['id']}" / "state" / "launches.log"
            if launches.exists():
                outcome.duplicates += max(0, len(launches.read_text().splitlines()) - 1)


def assert_clean(outcome: Outcome) -> None:
    assert outcome.terminal == outcome.jobs, outcome
    assert outcome.duplicates == 0, outcome.notes
    assert outcome.lost_events == 0, outcome.notes
    assert outcome.leaks == 0, outcome


def assert_costs_counted_once(runtime: Any, ids: list[str], project: str = "p1") -> None:
    """The project's running cost totals hold each job once, and sum to the jobs' own costs (docs/adr/0042)."""
    from decimal import Decimal

    from hastegeo.pipeline.totals import months_between

    jobs = [runtime.store.get(job_id) for job_id in ids]
    days = [job.finished_at.date() for job in jobs]
    totals = runtime.journal.totals
    months = [totals.month(project, name) for name in months_between(min(days), max(days))]
    counted = [job_id for month in months for job_id in month.counted]
    assert sorted(counted) == sorted(ids), "a job counted twice, or missed"
    assert sum(day.jobs for month in months for day in month.days.values()) == len(ids)
    amounts = [job.cost.amount for job in jobs]
    assert None not in amounts, [job.cost for job in jobs]
    assert sum((month.total() for month in months), Decimal(0)) == sum(amounts, Decimal(0))
    assert sum(amounts, Decimal(0)) > 0
