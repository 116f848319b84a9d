"""The JSON lines file says what exporting spans cost each process; a step looks its job's trace up only
when tracing is on and this process has not run a step of that job lately."""

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


def test_with_tracing_off_a_step_never_looks_up_its_jobs_trace() -> None:
    """Off, no message carries a traceparent: the lookup would be one storage read per step for nothing."""
    code = (
        "from hastegeo.telemetry.tracer import step_span, tracing_on\n"
        "looked = []\n"
        "def job_trace(job_id):\n"
        "    looked.append(job_id)\n"
        "    return None\n"
        "with step_span('poll', traceparent=None, job_id='j1', job_trace=job_trace):\n"
        "    pass\n"
        "print(tracing_on(), looked)\n"
        "from opentelemetry import trace\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "trace.set_tracer_provider(TracerProvider())\n"
        "with step_span('poll', traceparent=None, job_id='j1', job_trace=job_trace):\n"
        "    pass\n"
        "print(tracing_on(), looked)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert result.stdout.splitlines() == ["False []", "True ['j1']"]


def test_a_later_step_of_a_job_finds_its_trace_in_this_process_without_a_lookup() -> None:
    """The exit nudge is sent by the process that ran the submit step: it carries the trace, read from memory."""
    code = (
        "from opentelemetry import trace\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "trace.set_tracer_provider(TracerProvider())\n"
        "from hastegeo.store.queues import JobMessage\n"
        "from hastegeo.telemetry.tracer import recent_traceparent, step_span, trace_id_of, within\n"
        "looked = []\n"
        "def job_trace(job_id):\n"
        "    looked.append(job_id)\n"
        "    return None\n"
        "upstream = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'\n"
        "with step_span('submit', traceparent=upstream, job_id='j1', job_trace=job_trace):\n"
        "    pass\n"
        "with within(recent_traceparent('j1')):\n"
        "    nudge = JobMessage.model_validate_json(JobMessage(job_id='j1', kind='nudge').encode())\n"
        "with step_span('nudge', traceparent=None, job_id='j1', job_trace=job_trace) as span:\n"
        "    same = format(span.get_span_context().trace_id, '032x') == trace_id_of(upstream)\n"
        "with step_span('poll', traceparent=None, job_id='j2', job_trace=job_trace):\n"
        "    pass\n"
        "print(trace_id_of(nudge.traceparent) == trace_id_of(upstream), same, looked)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert result.stdout.strip() == "True True ['j2']"  # only the job this process had not seen was looked up
