"""A running Azure ML job's stdout or stderr, by byte range (docs/adr/0045).

The job's command writes each stream to a file of its own in its ``logs`` output, which lands
under the job's blob prefix (:mod:`.streams`): that file is read by range when it exists, one
ranged read. Else (an image without ``python3``, a job submitted before) the command's output is
the one log run history keeps of it: run details list the job's log files with a read URL each
(``log_files``: name → SAS URL), as ``jobs.stream`` of the SDK reads them, and the streamable
user log (``user_logs/std_log.txt``, chosen with the SDK's own pattern) holds both streams. It is
read by range straight from the URL: one run-details read and one ranged read. The runtime creates
the files before the workload starts, so a job's stream is read from one of the two throughout.
The URL is a credential: it is never logged (a failure is described without it).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from azure.ai.ml.constants._job.job import JobLogPattern

from hastegeo.compute.transfer import read_range
from hastegeo.utils.errors import describe_exception

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
    own: Any,
    details: Callable[[], Any],
    offset: int,
    limit: int,
    job: str,
    budget: LogReadBudget = LOG_READ_BUDGET,
) -> bytes | None:
    """At most ``limit`` bytes of the stream from ``offset``: from its own file (``own``, a BlobClient), else the
    combined log of run details (``details()``, read only then); None when there is no log to read (yet)."""
    try:
        served = read_range(own, offset, limit)
    except Exception as exc:  # best-effort: the reader asks again
        log.info("Azure ML job %s: its stream was not read from blob (%s)", job, describe_exception(exc))
        return None
    if served is not None:  # it exists (b"": nothing new)
        return served
    found = details()
    url = stream_log_url(found) if found is not None else None
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
