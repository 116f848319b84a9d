"""Structured, redacted, quiet logs.

- :func:`job_fields` gives the ``extra=`` of a log line about a job: the job
  id, project, workload and backend become fields of the record (and, through
  the OpenTelemetry log handler, attributes in App Insights' ``traces``
  table), not only words in its text.
- :class:`JsonFormatter` writes one JSON object per record with those fields,
  the trace and span ids, and the text as :mod:`hastegeo.utils.redaction`
  left it (install the redacting filter on the same handler).
- :class:`ExpectedNotFoundFilter` turns the Batch SDK's traceback for an
  expected 404 (a node file that is gone) into one debug line.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from opentelemetry import trace

from hastegeo.utils.redaction import is_redacted, redact

if TYPE_CHECKING:
    from hastegeo.models.job import Job

JOB_FIELDS = ("job_id", "project", "workload", "backend")
# The azure-batch SDK logs this, with a traceback, whenever an error body is not a
# Batch error document: every 404 of a streamed node-file read. The adapter maps
# the 404 itself; the traceback says nothing an operator can act on.
BATCH_MODEL_LOGGER = "azure.batch._utils.model_base"
_FAILSAFE = "Ran into a deserialization error"


def job_fields(job: Job | None = None, *, job_id: str | None = None, **more: Any) -> dict[str, Any]:
    """The ``extra=`` of a log line about a job (only the id when the job itself is not at hand)."""
    fields: dict[str, Any] = dict(more)
    if job is not None:
        fields.update(job_id=job.id, project=job.project_id, workload=job.workload, backend=job.backend)
    elif job_id is not None:
        fields["job_id"] = job_id
    return fields


class JsonFormatter(logging.Formatter):
    """One JSON line per record: time, level, logger, message, job fields, trace ids, exception."""

    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(self.fields(record), ensure_ascii=False, default=str)

    def fields(self, record: logging.LogRecord) -> dict[str, Any]:
        """The record's line as a dictionary (what :meth:`format` renders)."""
        clean: Callable[[str], str] = _as_is if is_redacted(record) else redact  # the filter's work, not twice
        entry: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname,
            "logger": record.name,
            "message": clean(record.getMessage()),
        }
        for name in JOB_FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                entry[name] = value
        context = trace.get_current_span().get_span_context()
        if context.is_valid:
            entry["trace_id"] = format(context.trace_id, "032x")
            entry["span_id"] = format(context.span_id, "016x")
        if record.exc_text:  # the filter renders and cleans the traceback into exc_text
            entry["exception"] = clean(record.exc_text)
        elif record.exc_info:
            entry["exception"] = redact(self.formatException(record.exc_info))
        return entry


def _as_is(text: str) -> str:
    return text


class ExpectedNotFoundFilter(logging.Filter):
    """Demote the SDK's failsafe-deserialization warning (a 404 body it cannot parse) to a debug line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if str(record.msg).startswith(_FAILSAFE):
            record.exc_info = None
            record.exc_text = None
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)
        return True


def quiet_expected_sdk_noise() -> None:
    """Install :class:`ExpectedNotFoundFilter` on the Batch SDK's logger (idempotent)."""
    logger = logging.getLogger(BATCH_MODEL_LOGGER)
    if not any(isinstance(f, ExpectedNotFoundFilter) for f in logger.filters):
        logger.addFilter(ExpectedNotFoundFilter())
