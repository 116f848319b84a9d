"""The JSON lines file says what exporting spans cost each process; tracing off costs no trace lookup."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hastegeo.telemetry.export import export_cost, read_trace

EXPORT_SPANS = """
import sys
from pathlib import Path
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from hastegeo.telemetry.export import JsonLines, JsonLinesSpanExporter
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(JsonLinesSpanExporter(JsonLines(Path(sys.argv[1])), report_cost=True)))
tracer = provider.get_tracer("test")
for i in range(int(sys.argv[2])):
    with tracer.start_as_current_span("poll", attributes={"haste.job_id": "j1", "haste.poll_seq": i}):
        pass
provider.shutdown()
"""


def test_each_process_reports_its_export_cost_and_readers_skip_those_lines(tmp_path: Path) -> None:
    otel = tmp_path / "otel.jsonl"
    for spans in (3, 2):  # two processes append to one file, as the host and its worker do
        subprocess.run([sys.executable, "-c", EXPORT_SPANS, str(otel), str(spans)], check=True, timeout=60)
    exported, cpu_s = export_cost(otel)
    assert exported == 5
    assert 0 < cpu_s < 5
    assert [span["attributes"]["haste.poll_seq"] for span in read_trace(otel, "j1")] == [0, 1, 2, 0, 1]
    assert export_cost(tmp_path / "absent.jsonl") == (0, 0.0)


def test_the_console_stream_gets_spans_only(tmp_path: Path) -> None:
    code = EXPORT_SPANS.replace("JsonLines(Path(sys.argv[1]))", "JsonLines(sys.stdout)").replace(
        "report_cost=True", "report_cost=False"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, "-", "2"], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert out.count('"signal": "span"') == 2
    assert '"signal": "export"' not in out
