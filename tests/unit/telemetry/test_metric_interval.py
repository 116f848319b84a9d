"""Metrics in the file and console modes: written every ``OTEL_METRIC_EXPORT_INTERVAL`` (60 s unset, as the
Azure Monitor distro), and once more when the process stops, so the file holds every process's totals."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hastegeo.telemetry.configure import DEFAULT_METRIC_INTERVAL_MS, metric_interval_ms
from hastegeo.telemetry.export import latest_metrics
from hastegeo.utils.errors import ConfigurationError


def test_the_interval_is_the_standard_variable_or_the_sdks_default() -> None:
    assert metric_interval_ms({}) == DEFAULT_METRIC_INTERVAL_MS == 60_000
    assert metric_interval_ms({"OTEL_METRIC_EXPORT_INTERVAL": " "}) == 60_000
    assert metric_interval_ms({"OTEL_METRIC_EXPORT_INTERVAL": "1000"}) == 1000


@pytest.mark.parametrize("value", ["0", "-5", "1.5", "soon"])
def test_a_bad_interval_names_the_variable(value: str) -> None:
    with pytest.raises(ConfigurationError, match="OTEL_METRIC_EXPORT_INTERVAL"):
        metric_interval_ms({"OTEL_METRIC_EXPORT_INTERVAL": value})


def test_a_process_that_stops_before_its_first_interval_still_writes_its_totals(tmp_path: Path) -> None:
    otel = tmp_path / "otel.jsonl"
    code = (
        "import os, sys\n"
        "os.environ.pop('OTEL_METRIC_EXPORT_INTERVAL', None)\n"
        "from hastegeo.telemetry.configure import configure_telemetry\n"
        "configure_telemetry('file:' + sys.argv[1])\n"
        "from hastegeo.telemetry import meter\n"
        "meter.blob_fallback('local')\n"
        "meter.blob_fallback('local')\n"
        "written = open(sys.argv[1]).read() if os.path.exists(sys.argv[1]) else ''\n"
        'print(written.count(\'"signal": "metric"\'))\n'  # nothing yet: the first interval is 60 s away
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(otel)], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "0"
    points = latest_metrics(otel)["haste.outputs.blob_fallback"]
    assert [(point["attributes"], point["value"]) for point in points] == [({"backend": "local"}, 2)]
    assert all(json.loads(line) for line in otel.read_text(encoding="utf-8").splitlines())


def test_the_totals_of_several_processes_writing_one_file_add_up(tmp_path: Path) -> None:
    """The development host's HTTP process and its queue workers count apart and share the file."""
    otel = tmp_path / "otel.jsonl"
    code = (
        "import sys\n"
        "from hastegeo.telemetry.configure import configure_telemetry\n"
        "configure_telemetry('file:' + sys.argv[1])\n"
        "from hastegeo.telemetry import meter\n"
        "for _ in range(int(sys.argv[2])):\n"
        "    meter.blob_fallback('local')\n"
    )
    for count in (2, 3):
        subprocess.run([sys.executable, "-c", code, str(otel), str(count)], check=True, timeout=60)
    points = latest_metrics(otel)["haste.outputs.blob_fallback"]
    assert sorted(point["value"] for point in points) == [2, 3]  # each process's latest totals, not the last one's
