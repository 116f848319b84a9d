"""Structured log lines: job fields as fields, trace ids, redaction as for every other line."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.telemetry.logs import JsonFormatter, job_fields
from hastegeo.telemetry.tracer import TRACER
from hastegeo.utils.redaction import RedactingFilter
from tests.telemetry_support import recording


@pytest.fixture
def lines() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RedactingFilter())
    logger = logging.getLogger("hastegeo.test.structured")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    yield logger, stream
    logger.removeHandler(handler)


def job() -> Job:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    return Job(
        id="j1",
        project_id="p1",
        workload="artifacts",
        state=JobState.RUNNING,
        requested_backend="auto",
        backend="local",
        created_at=now,
        updated_at=now,
        deadline_at=now + timedelta(hours=1),
    )


def test_a_job_line_carries_the_job_as_fields_and_the_trace(lines: tuple[logging.Logger, io.StringIO]) -> None:
    logger, stream = lines
    with recording(), TRACER.start_as_current_span("poll") as span:
        logger.warning("cancel of %s failed: %s", "j1", "AccountKey=c2VjcmV0 refused", extra=job_fields(job()))
    entry = json.loads(stream.getvalue())
    assert (entry["job_id"], entry["project"], entry["workload"], entry["backend"]) == (
        "j1",
        "p1",
        "artifacts",
        "local",
    )
    assert entry["level"] == "WARNING"
    assert entry["trace_id"] == format(span.get_span_context().trace_id, "032x")
    assert "c2VjcmV0" not in stream.getvalue()
    assert "AccountKey=[REDACTED]" in entry["message"]


def test_a_line_with_only_the_job_id_and_no_trace(lines: tuple[logging.Logger, io.StringIO]) -> None:
    logger, stream = lines
    logger.info("submit: job %s does not exist", "j9", extra=job_fields(job_id="j9"))
    entry = json.loads(stream.getvalue())
    assert entry["job_id"] == "j9"
    assert "project" not in entry
    assert "trace_id" not in entry


def test_a_traceback_is_redacted_too(lines: tuple[logging.Logger, io.StringIO]) -> None:
    logger, stream = lines
    try:
        raise RuntimeError("sig=abcdef123 in the url")
    except RuntimeError:
        logger.exception("failed")
    entry = json.loads(stream.getvalue())
    assert "abcdef123" not in entry["exception"]
    assert "RuntimeError" in entry["exception"]


def test_a_record_through_two_handlers_is_redacted_once_and_clean_in_both(monkeypatch: pytest.MonkeyPatch) -> None:
    """With telemetry on, a record reaches the JSON lines handler and the root's: one redaction serves both,
    and a formatter given a record no filter cleaned still redacts it itself."""
    import hastegeo.telemetry.logs as logs_module
    import hastegeo.utils.redaction as redaction_module

    calls: list[str] = []
    real = redaction_module.redact

    def counting(text: str) -> str:
        calls.append(text)
        return real(text)

    monkeypatch.setattr(redaction_module, "redact", counting)
    monkeypatch.setattr(logs_module, "redact", counting)
    streams = [io.StringIO(), io.StringIO()]
    handlers = [logging.StreamHandler(stream) for stream in streams]
    for handler in handlers:
        handler.setFormatter(JsonFormatter())
        handler.addFilter(RedactingFilter())
    logger = logging.getLogger("hastegeo.test.twice")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    for handler in handlers:
        logger.addHandler(handler)
    try:
        try:
            raise RuntimeError("sig=abcdef123 in the url")
        except RuntimeError:
            logger.exception("read %s failed", "https://a.blob.core.windows.net/c/b?sv=1&sig=SECRET")
    finally:
        for handler in handlers:
            logger.removeHandler(handler)
    assert len(calls) == 2  # the message and the traceback, once each, for both handlers
    for stream in streams:
        entry = json.loads(stream.getvalue())
        assert "SECRET" not in entry["message"]
        assert "sig=[REDACTED]" in entry["message"]
        assert "abcdef123" not in entry["exception"]
        assert "RuntimeError" in entry["exception"]

    calls.clear()
    unfiltered = logging.LogRecord("hastegeo.x", logging.INFO, __file__, 1, "key sig=%s", ("SECRET",), None)
    assert "SECRET" not in JsonFormatter().format(unfiltered)  # no filter ran: the formatter redacts
    assert len(calls) == 1
