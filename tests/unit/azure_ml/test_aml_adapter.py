"""The Azure ML backend driven submit → status → read_output → cancel against the stand-in.

The stand-in returns real SDK entities and raises real azure-core exceptions;
outputs live in a real Azurite, as they would on the workspace's datastore.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from azure.core.exceptions import ServiceRequestError
from azure.storage.blob import BlobServiceClient

from hastegeo.compute.azure_ml.adapter import SUBMISSION_RECORD, AzureMLBackend, create
from hastegeo.compute.azure_ml.entities import TAG_CODE_HASH, TAG_FINGERPRINT, build_command_job, job_name
from hastegeo.compute.azure_ml.settings import AmlMode, AmlSettings
from hastegeo.compute.context import BackendContext
from hastegeo.compute.contract import ComputeBackend, ComputeJobSpec, ComputeState
from hastegeo.compute.fingerprint import legacy_fingerprint
from hastegeo.utils.errors import ConfigurationError, TerminalBackendError, TransientBackendError
from hastegeo_dev.devhost.azurite import Azurite
from hastegeo_dev.testing.aml_standin import StandInMLClient, http_error
from tests.unit.azure_ml.aml_support import context_settings, make_spec

pytestmark = pytest.mark.azurite
NOW = datetime(2026, 9, 2, 12, 0, tzinfo=UTC)


class Harness:
    def __init__(self, azurite: Azurite, unique: str, **aml: str) -> None:
        self.client = StandInMLClient()
        self.sleeps: list[float] = []
        self.blobs = BlobServiceClient.from_connection_string(azurite.connection_string)
        self.container = f"out-{unique}"
        self.blobs.create_container(self.container)
        settings = context_settings(azurite.connection_string, **aml)
        self.context = BackendContext(
            settings=settings, blob_service=self.blobs, clock=lambda: NOW, sleep=self.sleeps.append
        )
        self.backend = create(self.context, client_factory=lambda _: self.client)

    def spec(self, job_id: str = "job-0001") -> ComputeJobSpec:
        from hastegeo.compute.contract import BlobLocation

        return make_spec(job_id, output=BlobLocation(container=self.container, path=f"p1/{job_id}"))

    def put(self, blob: str, data: bytes) -> None:
        self.blobs.get_blob_client(self.container, blob).upload_blob(data, overwrite=True)


@pytest.fixture
def harness(azurite: Azurite, unique: str) -> Harness:
    return Harness(azurite, unique)


def test_is_a_compute_backend(harness: Harness) -> None:
    assert isinstance(harness.backend, ComputeBackend)
    assert isinstance(harness.backend, AzureMLBackend)


def test_submit_status_read_output_lifecycle(harness: Harness) -> None:
    spec = harness.spec()
    handle = harness.backend.submit(spec)
    name = job_name(spec)
    assert handle.backend == "azure_ml"
    assert handle.provider_ids["job_name"] == name
    assert handle.provider_ids["experiment"] == "haste-p1"
    assert handle.provider_ids["environment"] == "image:hasteacr.azurecr.io/haste/runtime:1.0"
    assert handle.submitted_at == NOW
    assert "notes" not in handle.provider_ids
    assert handle.notes is None
    submitted = harness.client.submitted(name)
    datastore = harness.container.replace("-", "_")
    assert submitted.outputs["outputs"].path == f"azureml://datastores/{datastore}/paths/p1/job-0001/outputs/"

    assert harness.backend.status(handle).state is ComputeState.QUEUED
    for aml, state in (("Preparing", ComputeState.QUEUED), ("Running", ComputeState.RUNNING)):
        harness.client.set_status(name, aml)
        status = harness.backend.status(handle)
        assert status.state is state
        assert aml in (status.detail or "")
    assert harness.backend.read_output(handle, "outputs/imagery_manifest.json").data is None
    harness.put("p1/job-0001/outputs/imagery_manifest.json", b'{"files": []}')
    harness.client.set_status(name, "Completed")
    assert harness.backend.status(handle).state is ComputeState.SUCCEEDED
    assert harness.backend.read_output(handle, "outputs/imagery_manifest.json").data == b'{"files": []}'
    record = json.loads(harness.backend.read_output(handle, SUBMISSION_RECORD).data or b"{}")
    assert record["jobName"] == name
    assert record["codeSha256"] is None
    harness.backend.cleanup(handle)  # a no-op that says so
    assert harness.client.count("jobs.create_or_update") == 1


def test_list_active_names_our_unfinished_jobs_only(harness: Harness) -> None:
    running, done = harness.spec("job-0001"), harness.spec("job-0002")
    handle = harness.backend.submit(running)
    harness.backend.submit(done)
    harness.client.set_status(job_name(done), "Completed")
    aml = harness.context.section(AmlSettings)
    someone_else = build_command_job(harness.spec("job-0003"), aml, environment="azureml:x:1")
    someone_else.name, someone_else.tags = "someone-else", {"project": "p1"}
    harness.client.jobs.create_or_update(someone_else)  # in the workspace, without our job-id tag
    listed = harness.backend.list_active()
    assert [(ours, h.provider_ids["job_name"]) for ours, h in listed] == [("job-0001", handle.provider_ids["job_name"])]
    harness.client.set_status(job_name(running), "Failed")
    assert harness.backend.list_active() == []
    harness.client.fail("jobs.list", http_error(403, "AuthorizationFailed", "not allowed"))
    with pytest.raises(TerminalBackendError, match="list jobs"):
        harness.backend.list_active()


def test_resubmit_binds_instead_of_submitting_twice(harness: Harness) -> None:
    spec = harness.spec()
    first = harness.backend.submit(spec)
    second = harness.backend.submit(spec)
    assert first.provider_ids == second.provider_ids
    assert harness.client.count("jobs.create_or_update") == 1


def test_a_same_named_job_that_is_not_ours_is_refused(harness: Harness) -> None:
    harness.backend.submit(harness.spec())
    other = harness.spec().model_copy(update={"args": ("--different",)})
    with pytest.raises(TerminalBackendError, match="not submitted for this job spec"):
        harness.backend.submit(other)


@pytest.mark.parametrize("same_spec", [True, False])
def test_a_job_submitted_before_the_one_fingerprint_binds_after_the_upgrade(harness: Harness, same_spec: bool) -> None:
    """Such a job carries the whole-spec digest (pinned to the old code in test_submission_fingerprint)."""
    spec = harness.spec()
    stored_for = spec if same_spec else spec.model_copy(update={"args": ("--different",)})
    old = build_command_job(spec, harness.context.section(AmlSettings), environment="azureml:haste-runtime:1")._to_job()
    old.tags[TAG_FINGERPRINT] = legacy_fingerprint(stored_for)
    harness.client.state.jobs[job_name(spec)] = old
    harness.client.state.statuses[job_name(spec)] = "Running"
    if not same_spec:
        with pytest.raises(TerminalBackendError, match="not submitted for this job spec"):
            harness.backend.submit(spec)
        return
    handle = harness.backend.submit(spec)  # the redelivered submit
    assert harness.client.count("jobs.create_or_update") == 0
    assert harness.backend.status(handle).state is ComputeState.RUNNING


def test_a_conflicting_concurrent_create_binds(harness: Harness) -> None:
    spec = harness.spec()
    other = StandInMLClient()
    create(harness.context, client_factory=lambda _: other).submit(spec)  # a concurrent attempt's job, same spec

    def created_concurrently(name: str) -> None:  # our GET saw nothing; now the other PUT lands first
        harness.client.state.jobs[name] = other.submitted(name)
        harness.client.state.statuses[name] = "Queued"
        raise http_error(409, "Conflict", "A job with this name already exists")

    harness.client.before_next("jobs.create_or_update", created_concurrently)
    handle = harness.backend.submit(spec)
    assert handle.provider_ids["job_name"] == job_name(spec)
    assert harness.client.count("jobs.get") == 2


def test_failed_job_reason_comes_from_the_error_details(harness: Harness) -> None:
    handle = harness.backend.submit(harness.spec())
    harness.client.set_status(
        handle.provider_ids["job_name"], "Failed", error=("UserError", "Execution failed: exit code 2")
    )
    status = harness.backend.status(handle)
    assert status.state is ComputeState.FAILED
    assert status.reason == "UserError: Execution failed: exit code 2"


def test_canceled_is_cancelled_never_success(harness: Harness) -> None:
    handle = harness.backend.submit(harness.spec())
    name = handle.provider_ids["job_name"]
    harness.client.set_status(name, "Running")
    harness.backend.cancel(handle)
    assert ("jobs.begin_cancel", name) in harness.client.calls
    assert harness.backend.status(handle).state is ComputeState.RUNNING  # CancelRequested
    harness.client.set_status(name, "Canceled")
    status = harness.backend.status(handle)
    assert status.state is ComputeState.CANCELLED
    harness.backend.cancel(handle)  # cancelling a finished job is not an error
    assert harness.client.count("jobs.begin_cancel") == 1


def test_transient_errors_are_retried_within_one_budget(harness: Harness) -> None:
    harness.client.fail("jobs.get", http_error(503, "ServiceUnavailable"), ServiceRequestError("connection reset"))
    harness.client.fail("jobs.create_or_update", http_error(429, "TooManyRequests"))
    handle = harness.backend.submit(harness.spec())
    assert harness.sleeps == [0.5, 1.0, 0.5]
    assert handle.provider_ids["job_name"]


def test_budget_exhausted_raises_transient_chained(harness: Harness) -> None:
    handle = harness.backend.submit(harness.spec())
    errors = [http_error(500, "InternalError", f"boom {i}") for i in range(3)]
    harness.client.fail("jobs.get", *errors)
    with pytest.raises(TransientBackendError) as caught:
        harness.backend.status(handle)
    assert caught.value.__cause__ is errors[-1]
    assert harness.client.count("jobs.get") == 1 + 3  # submit's lookup, then exactly the budget


@pytest.mark.parametrize(
    ("status", "needle"),
    [
        (400, "AML_COMPUTE"),
        (401, "AML_IDENTITY_MODE"),
        (403, "AML_IDENTITY_MODE"),
        (404, "AML_WORKSPACE"),
    ],
)
def test_terminal_errors_name_the_setting_to_fix(harness: Harness, status: int, needle: str) -> None:
    harness.client.fail("jobs.create_or_update", http_error(status, "UserError", "nope"))
    with pytest.raises(TerminalBackendError, match=needle) as caught:
        harness.backend.submit(harness.spec())
    assert harness.sleeps == []
    assert "UserError: nope" in str(caught.value)


def test_status_of_a_vanished_job_is_terminal(harness: Harness) -> None:
    handle = harness.backend.submit(harness.spec())
    harness.client.state.jobs.clear()
    with pytest.raises(TerminalBackendError, match="no longer exists"):
        harness.backend.status(handle)
    harness.backend.cancel(handle)  # nothing to cancel


def test_missing_registered_environment_is_created_once(azurite: Azurite, unique: str) -> None:
    harness = Harness(azurite, unique, AML_ENVIRONMENT_SOURCE="registered", AML_ENVIRONMENT="haste-runtime@latest")
    first = harness.backend.submit(harness.spec("job-a"))
    second = harness.backend.submit(harness.spec("job-b"))
    assert harness.client.count("environments.create_or_update") == 1
    assert harness.client.count("environments.get") == 1
    assert "did not exist and was created" in (first.notes or "")
    assert "notes" not in second.provider_ids
    assert second.notes is None
    assert first.provider_ids["environment"] == "haste-runtime:1"
    assert harness.client.submitted(job_name(harness.spec("job-b"))).environment == "azureml:haste-runtime:1"
    env = harness.client.environments.get("haste-runtime", version="1")
    assert env.image == "hasteacr.azurecr.io/haste/runtime:1.0"
    record = json.loads(harness.backend.read_output(first, SUBMISSION_RECORD).data or b"{}")
    assert "was created" in record["notes"][0]


def test_existing_registered_environment_is_used_as_is(azurite: Azurite, unique: str) -> None:
    from azure.ai.ml.entities import Environment  # noqa: TID251

    harness = Harness(azurite, unique, AML_ENVIRONMENT_SOURCE="registered", AML_ENVIRONMENT="curated:7")
    harness.client.add_environment(Environment(name="curated", version="7", image="mcr.microsoft.com/x:1"))
    handle = harness.backend.submit(harness.spec())
    assert harness.client.count("environments.create_or_update") == 0
    assert handle.provider_ids["environment"] == "curated:7"


def test_code_upload_warns_and_keeps_the_hash(
    azurite: Azurite, unique: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "run.py").write_text("print('local')\n")
    harness = Harness(azurite, unique, AML_CODE_DIR=str(tmp_path))
    with caplog.at_level("WARNING"):
        handle = harness.backend.submit(harness.spec())
    digest = handle.provider_ids["code_sha256"]
    assert len(digest) == 64
    assert "may not be reproducible" in (handle.notes or "")
    assert any("local code snapshot" in r.getMessage() for r in caplog.records)
    job = harness.client.submitted(handle.provider_ids["job_name"])
    assert job.code == str(tmp_path)
    assert job.tags[TAG_CODE_HASH] == digest
    record = json.loads(harness.backend.read_output(handle, SUBMISSION_RECORD).data or b"{}")
    assert record["codeSha256"] == digest


def test_factory_refuses_disabled_and_bad_code_dir(azurite: Azurite) -> None:
    blobs = BlobServiceClient.from_connection_string(azurite.connection_string)
    disabled = context_settings(azurite.connection_string)
    disabled = disabled.model_copy(update={"mode": AmlMode.DISABLED})
    with pytest.raises(ConfigurationError, match="AML_MODE"):
        create(BackendContext(settings=disabled, blob_service=blobs), client_factory=lambda _: StandInMLClient())
    bad = context_settings(azurite.connection_string, AML_CODE_DIR="/nonexistent/dir")
    with pytest.raises(ConfigurationError, match="AML_CODE_DIR"):
        create(BackendContext(settings=bad, blob_service=blobs), client_factory=lambda _: StandInMLClient())
