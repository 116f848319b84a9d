"""The JSON lines sink: one open file, each batch in one write, a replaced file followed; log lines as fields;
and the trace profile's reading of py-spy's collapsed stacks."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from hastegeo.telemetry.export import JsonLines, JsonLinesLogHandler, job_logs
from tests.bench.trace_profile import parse_raw


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_the_sink_appends_batches_and_follows_a_file_that_was_removed_or_replaced(tmp_path: Path) -> None:
    path = tmp_path / "folder" / "otel.jsonl"
    sink = JsonLines(path)
    sink.write([{"n": 1}, {"n": 2}])
    sink.write([])
    sink.write([{"n": 3}])
    assert _lines(path) == [{"n": 1}, {"n": 2}, {"n": 3}]
    path.unlink()  # a reader cleared it: the next batch starts the file anew
    sink.write([{"n": 4}])
    assert _lines(path) == [{"n": 4}]
    path.rename(tmp_path / "folder" / "old.jsonl")
    path.write_text('{"n": 0}\n', encoding="utf-8")  # replaced by another file: appended to that one
    sink.write([{"n": 5}])
    assert _lines(path) == [{"n": 0}, {"n": 5}]
    assert _lines(tmp_path / "folder" / "old.jsonl") == [{"n": 4}]


def test_a_log_record_becomes_one_redacted_line_with_its_job_fields(tmp_path: Path) -> None:
    path = tmp_path / "otel.jsonl"
    logger = logging.getLogger("hastegeo.test_json_lines")
    handler = JsonLinesLogHandler(JsonLines(path))
    logger.addHandler(handler)
    try:
        logger.warning("read https://acct.blob.core.windows.net/c/b?sv=2024&sig=SECRET failed", extra={"job_id": "j1"})
        logger.debug("below the handler's level")
    finally:
        logger.removeHandler(handler)
    [line] = job_logs(path, "j1")
    assert line["signal"] == "log"
    assert line["level"] == "WARNING"
    assert "SECRET" not in json.dumps(line)
    assert len(_lines(path)) == 1


RAW = (
    'process 10:"python -m hastegeo_dev.devhost --app function_app:app";<module> (a.py:1);step (b.py:5) 7\n'
    'process 10:"python -m hastegeo_dev.devhost --app function_app:app";<module> (a.py:1) 3\n'
    'process 11:"python -c \n'
    'import x";<module> (<string>:1);work (c.py:2) 100\n'
    'process 12:"python -m hastegeo_dev.devhost --queues-only";thread (0x1);run (d.py:9);step (b.py:5) 5\n'
    'process 10:"python -m hastegeo_dev.devhost";process 12:"python -m hastegeo_dev.devhost --queues-only";'
    'process 13:"python -m hastegeo.compute.local_node.run";<module> (e.py:1) 50\n'
)


def test_the_profile_counts_only_the_host_processes_own_and_inclusive_samples() -> None:
    samples = parse_raw(RAW, jobs=2, pids={10, 12})
    assert samples.total == 15
    assert samples.own == {"step (b.py:5)": 12, "<module> (a.py:1)": 3}
    assert samples.inclusive["<module> (a.py:1)"] == 10
    assert samples.inclusive["step (b.py:5)"] == 12
    assert "work (c.py:2)" not in samples.inclusive
