"""HASTE_OTEL_EXPORT is a declared setting, off by default; the workload launcher never loads OpenTelemetry."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hastegeo.settings.app import parse_export, telemetry_settings
from hastegeo.settings.load import load_settings
from hastegeo.utils.errors import ConfigurationError

BASE = {"AzureWebJobsStorage": "UseDevelopmentStorage=true"}


def test_off_by_default_and_each_mode_parses() -> None:
    assert load_settings(BASE).telemetry.export == "off"
    assert parse_export("off") == ("off", None)
    assert parse_export("") == ("off", None)
    assert parse_export("console") == ("console", None)
    assert parse_export("azure") == ("azure", None)
    assert parse_export("file:.haste/otel.jsonl") == ("file", Path(".haste/otel.jsonl"))


@pytest.mark.parametrize("value", ["file:", "otlp", "files:/tmp/x", "Console"])
def test_an_unknown_export_fails_at_start_up_naming_the_setting(value: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        load_settings({**BASE, "HASTE_OTEL_EXPORT": value})
    assert "HASTE_OTEL_EXPORT" in str(caught.value)
    with pytest.raises(ConfigurationError, match="HASTE_OTEL_EXPORT"):
        telemetry_settings({"HASTE_OTEL_EXPORT": value})


def test_the_workload_launcher_and_the_settings_import_no_opentelemetry() -> None:
    code = (
        "import sys, hastegeo.workloads.artifacts.run, hastegeo.workloads._run.harness, hastegeo.settings.app\n"
        "print(','.join(m for m in sys.modules if m.startswith(('opentelemetry', 'azure.monitor'))))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert result.stdout.strip() == ""


def test_telemetry_off_installs_nothing_in_a_fresh_process(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from hastegeo.telemetry.configure import configure_telemetry\n"
        "print(configure_telemetry('off'))\n"
        "print(','.join(m for m in sys.modules if m.startswith(('opentelemetry.sdk', 'azure.monitor'))))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert result.stdout.split("\n")[:2] == ["off", ""]
