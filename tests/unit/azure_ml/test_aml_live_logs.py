"""A running Azure ML job's output by byte range from the log its run details list (docs/adr/0045).

The stand-in lists the job's log as run history does (a read URL with a SAS), kept in a real Azurite;
the adapter reads it by range with the blob SDK, and never puts the URL in a log record.
"""

from __future__ import annotations

import logging
from urllib.parse import parse_qs, quote, urlsplit

import pytest

from hastegeo.compute.azure_ml.adapter import create
from hastegeo.compute.azure_ml.entities import job_name
from hastegeo.compute.azure_ml.joblog import LogReadBudget
from hastegeo.utils.redaction import RedactingFilter
from hastegeo_dev.devhost.azurite import Azurite
from tests.unit.azure_ml.test_aml_adapter import Harness

pytestmark = pytest.mark.azurite
# Production's budget (2 s to connect, 5 s to read) is what an HTTP request waits; the session's Azurite
# on a loaded machine may take longer to answer, which would read as "no log" here. The test is about
# what is read, so its reads get the time storage needs.
PATIENT = LogReadBudget(connect_timeout_s=60, read_timeout_s=60)


def test_the_jobs_log_by_range_while_it_runs(azurite: Azurite, unique: str, caplog: pytest.LogCaptureFixture) -> None:
    harness = Harness(azurite, unique)
    harness.backend = create(harness.context, client_factory=lambda _: harness.client, log_budget=PATIENT)
    spec = harness.spec("job-logs-1")
    handle = harness.backend.submit(spec)
    name = job_name(spec)
    harness.client.set_status(name, "Running")
    assert harness.backend.read_output_tail(handle, "logs/stdout.txt", 0) is None  # no log listed yet
    logs = harness.blobs.get_container_client(harness.container)
    harness.client.write_log(name, b"epoch 1\nepoch 2\n", logs)
    assert harness.backend.read_output_tail(handle, "logs/stdout.txt", 0) == b"epoch 1\nepoch 2\n"
    assert harness.backend.read_output_tail(handle, "logs/stdout.txt", 8, limit=5) == b"epoch"
    assert harness.backend.read_output_tail(handle, "logs/stdout.txt", 16) == b""  # at its end: nothing new
    assert harness.backend.read_output_tail(handle, "logs/stderr.txt", 8) == b"epoch 2\n"  # one log, both streams
    assert harness.backend.read_output_tail(handle, "logs/progress.log", 0) is None  # not a stream: blob only
    harness.client.write_log(name, b"epoch 3\n", logs)
    assert harness.backend.read_output_tail(handle, "logs/stdout.txt", 16) == b"epoch 3\n"
    # A log whose URL no longer answers (its SAS expired, say) is None, and the URL is in no record.
    url = harness.client.state.log_urls[name]["user_logs/std_log.txt"]
    signature = parse_qs(urlsplit(url).query)["sig"][0]
    harness.client.state.log_urls[name]["user_logs/std_log.txt"] = url.replace("sig=", "sig=x")
    with caplog.at_level(logging.DEBUG):
        assert harness.backend.read_output_tail(handle, "logs/stdout.txt", 0) is None
    forms = (signature, quote(signature), quote(signature, safe=""))
    ours = "\n".join(record.getMessage() for record in caplog.records if record.name.startswith("hastegeo"))
    assert "its log was not read (HttpResponseError)" in ours
    assert not [form for form in forms if form in ours]
    # urllib3 logs the URL it asked at DEBUG: every handler's redacting filter cleans that record.
    for record in caplog.records:
        RedactingFilter().filter(record)
        assert not [form for form in forms if form in record.getMessage()], record.name
    assert ("runs.get_run_details", name) in harness.client.calls


def test_each_stream_from_its_own_file_once_the_jobs_runtime_wrote_it(azurite: Azurite, unique: str) -> None:
    harness = Harness(azurite, unique)
    spec = harness.spec("job-logs-2")
    handle = harness.backend.submit(spec)
    name = job_name(spec)
    harness.client.set_status(name, "Running")
    harness.client.write_log(name, b"out 1\nerr 1\n", harness.blobs.get_container_client(harness.container))
    harness.put(handle.output.child("logs/stdout.txt"), b"")  # created before the workload starts
    harness.put(handle.output.child("logs/stderr.txt"), b"err 1\n")
    calls = len(harness.client.calls)
    assert harness.backend.read_output_tail(handle, "logs/stdout.txt", 0) == b""  # its own file: nothing yet
    assert harness.backend.read_output_tail(handle, "logs/stderr.txt", 0) == b"err 1\n"
    assert harness.backend.read_output_tail(handle, "logs/stderr.txt", 4, limit=1) == b"1"
    assert len(harness.client.calls) == calls  # run history is not asked: one ranged read of our storage
    harness.put(handle.output.child("logs/stdout.txt"), b"out 1\n")
    assert harness.backend.read_output_tail(handle, "logs/stdout.txt", 0) == b"out 1\n"
