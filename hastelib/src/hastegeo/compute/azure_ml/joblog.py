"""A running Azure ML job's output, by byte range, from its run history (docs/adr/0045).

Run details list the job's log files with a read URL each (``log_files``: name → SAS URL),
as ``jobs.stream`` of the SDK reads them. The command's output is the streamable user log
(``user_logs/std_log.txt``, chosen with the SDK's own pattern), which holds what the
command wrote to stdout and to stderr: both streams read it. It is read by range straight
from the URL, so a follower costs one run-details read and one ranged blob read.
The URL is a credential: it is never logged (a failure is described without it).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

from azure.ai.ml.constants._job.job import JobLogPattern

from hastegeo.compute.transfer import read_range

log = logging.getLogger(__name__)

STD_LOG_PATHS = ("logs/stdout.txt", "logs/stderr.txt")
_STREAMABLE = re.compile(JobLogPattern.COMMON_RUNTIME_STREAM_LOG_PATTERN)


@dataclass(frozen=True)
class LogReadBudget:
    """How long one read of the log may take: an HTTP request waits on it, so one retry and short
    timeouts; the follower asks again anyway. Injected (the adapter's ``create``) so that a test on a
    loaded machine can give its storage the time it needs without changing what production waits."""

    connect_timeout_s: float = 2.0
    read_timeout_s: float = 5.0


LOG_READ_BUDGET = LogReadBudget()


def stream_log_url(details: Any) -> str | None:
    """The read URL of the job's streamable user log in ``details`` (RunDetails), if it has one yet."""
    files: dict[str, str] = dict(getattr(details, "log_files", None) or {})
    names = sorted(name for name in files if _STREAMABLE.fullmatch(name))
    return files[names[0]] if names else None


def read_stream(
    details: Any, offset: int, limit: int, job: str, budget: LogReadBudget = LOG_READ_BUDGET
) -> bytes | None:
    """At most ``limit`` bytes of the job's output from ``offset``; None when there is no log to read (yet)."""
    url = stream_log_url(details) if details is not None else None
    if url is None:
        return None
    from azure.storage.blob import BlobClient, LinearRetry

    client = BlobClient.from_blob_url(
        url,
        retry_policy=LinearRetry(backoff=1, retry_total=1),
        connection_timeout=budget.connect_timeout_s,
        read_timeout=budget.read_timeout_s,
    )
    try:
        return read_range(client, offset, limit)
    except Exception as exc:  # best-effort: the reader asks again, or the blob copy answers
        log.info("Azure ML job %s: its log was not read (%s)", job, type(exc).__name__)
        return None
