"""What an Azure ML job ran on, from its run details and its compute cluster (docs/adr/0038). Pure.

Azure ML reports no cost per job. Its run history says when the run started and ended
(``startTimeUtc``, ``endTimeUtc``); the job names its cluster and instance count; the cluster its VM
size (``size``), its tier (dedicated or low priority, billed at the spot rate) and its region. A job
under a compute profile (ADR 0043) names its own instance type (``resources.instance_type``) and may ask
for the spot tier (``queue_settings.job_tier``): those win over the cluster's. One job is one run: Azure
ML does not report the runs within it (a low-priority node preempted and the job
resumed is one run, from its first start to its end).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from hastegeo.costs.attribution import AmlAttempt
from hastegeo.costs.prices import Priority
from hastegeo.costs.usage import Run, Usage


def job_usage(job: Any, details: Any, compute: Any, region: str, now: datetime, *, ended: bool) -> Usage | None:
    """The job's one run (None: it has not started, or what it ran on cannot be told)."""
    start: datetime | None = getattr(details, "start_time_utc", None)
    if start is None:
        return None if not ended else Usage(count=0)
    resources = getattr(job, "resources", None)
    size = getattr(resources, "instance_type", None) or getattr(compute, "size", None)
    region = str(getattr(compute, "location", None) or region)
    job_tier = str(getattr(getattr(job, "queue_settings", None), "job_tier", None) or "").lower()
    try:
        tier = Priority.SPOT if job_tier == "spot" else Priority.parse(getattr(compute, "tier", None) or "dedicated")
    except ValueError:
        return Usage(count=1)
    if not size or not region:
        return Usage(count=1)
    end = getattr(details, "end_time_utc", None) if ended else None
    count = int(getattr(resources, "instance_count", None) or 1)
    attempt = AmlAttempt(
        region=region,
        instance_type=str(size),
        instance_count=count,
        tier=tier,
        started_at=start,
        ended_at=max(end or now, start),
    )
    return Usage(runs=(Run(attempt=attempt, open=not ended or end is None),), count=1)
