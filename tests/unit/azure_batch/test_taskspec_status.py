"""Pure pieces of the Batch adapter: ids, fingerprint, task definition, status mapping."""

from __future__ import annotations

import re
import shlex
from typing import Any

import pytest

from hastegeo.compute.azure_batch import taskspec
from hastegeo.compute.azure_batch.naming import provider_id
from hastegeo.compute.azure_batch.settings import BatchSettings
from hastegeo.compute.azure_batch.status import TaskView, enum_text, failure_reason, to_status
from hastegeo.compute.contract import BlobLocation, ComputeJobSpec, ComputeState, InputFile
from hastegeo.compute.tail import last_lines
from hastegeo.utils.errors import TerminalBackendError

PLACEMENT = taskspec.Placement(
    pool_id="cpu",
    image="registry.example/haste:1",
    blob_account_url="https://acct.blob.core.windows.net",
    identity_resource_id="/subscriptions/s/resourceGroups/r/providers/Microsoft.ManagedIdentity/userAssignedIdentities/p",
    registry="registry.example",
    retention_s=3600,
)


def make_spec(**overrides: object) -> ComputeJobSpec:
    fields: dict[str, object] = {
        "job_id": "J-1",
        "name": "j-1",
        "workload": "imagery",
        "entrypoint": ("python", "-m", "hastegeo.workloads.imagery"),
        "args": ("--fast",),
        "output": BlobLocation(container="outputs", path="p1/j-1"),
        "time_limit_s": 600,
        "retry_budget": 2,
    }
    fields.update(overrides)
    return ComputeJobSpec.model_validate(fields)


@pytest.mark.parametrize("name", ["job-1", "Job-1", "a" * 80, "x/y z", "ÄÖ", "--"])
def test_provider_ids_are_valid_deterministic_and_distinct(name: str) -> None:
    value = provider_id(name)
    assert re.fullmatch(r"[a-z0-9_-]{1,64}", value)
    assert provider_id(name) == value
    assert provider_id(name + "x") != value


def test_provider_ids_keep_case_variants_apart() -> None:
    assert provider_id("job-1") == "haste-job-1"
    assert provider_id("Job-1") != provider_id("job-1")


def test_fingerprint_follows_identity_fields_only() -> None:
    spec = make_spec()
    assert spec.fingerprint() == make_spec(labels={"x": "y"}).fingerprint()
    assert spec.fingerprint() != make_spec(args=("--slow",)).fingerprint()
    assert spec.fingerprint() != make_spec(job_id="J-2").fingerprint()


def test_task_definition_carries_container_identity_outputs_and_constraints() -> None:
    spec = make_spec(
        env={"A": "1", "HASTE_JOB_WORKDIR": "/evil"},
        inputs=(
            InputFile(source=BlobLocation(container="inputs", path="p1/scene.tif"), dest="scene.tif"),
            InputFile(source=BlobLocation(container="inputs", path="p1/tiles"), dest="tiles", is_prefix=True),
        ),
    )
    task: Any = taskspec.task_options(spec, "haste-j-1", PLACEMENT, "fp")  # SDK models: optional everywhere
    assert task.container_settings.image_name == PLACEMENT.image
    assert task.container_settings.registry.identity_reference.resource_id == PLACEMENT.identity_resource_id
    env = {item.name: item.value for item in task.environment_settings}
    assert env == {"A": "1", taskspec.FINGERPRINT_VARIABLE: "fp"}  # the workdir comes from the node, not the spec
    single, prefix = task.resource_files
    assert single.http_url == "https://acct.blob.core.windows.net/inputs/p1/scene.tif"
    assert single.file_path == "inputs/scene.tif"
    assert (prefix.storage_container_url, prefix.blob_prefix) == (
        "https://acct.blob.core.windows.net/inputs",
        "p1/tiles/",
    )
    assert all(item.identity_reference.resource_id == PLACEMENT.identity_resource_id for item in task.resource_files)
    destinations = {
        item.file_pattern: (item.destination.container.path, enum_text(item.upload_options.upload_condition))
        for item in task.output_files
    }
    assert destinations == {
        "outputs/**/*": ("p1/j-1/outputs", "taskcompletion"),
        "logs/**/*": ("p1/j-1/logs", "taskcompletion"),
        "../stdout.txt": ("p1/j-1/logs/stdout.txt", "taskcompletion"),
        "../stderr.txt": ("p1/j-1/logs/stderr.txt", "taskcompletion"),
    }
    assert all(item.destination.container.container_url.endswith("/outputs") for item in task.output_files)
    assert all(item.destination.container.identity_reference is not None for item in task.output_files)
    constraints = task.constraints
    assert constraints.max_wall_clock_time.total_seconds() == 600
    assert constraints.retention_time.total_seconds() == 3600
    assert constraints.max_task_retry_count == 2


def test_command_line_sets_workdir_writes_params_and_execs_argv() -> None:
    spec = make_spec(env={"HASTE_PARAMS_JSON": '{"a": "it\'s"}'})
    argv = shlex.split(taskspec.command_line(spec))
    assert argv[:2] == ["/bin/sh", "-c"]
    script = argv[2]
    assert 'export HASTE_JOB_WORKDIR="$AZ_BATCH_TASK_WORKING_DIR"' in script
    assert "params.json" in script
    assert script.rstrip().endswith("exec python -m hastegeo.workloads.imagery --fast")
    assert "params.json" not in taskspec.command_line(make_spec())


def test_inputs_cannot_escape_the_inputs_folder() -> None:
    bad = make_spec(inputs=(InputFile(source=BlobLocation(container="c", path="p"), dest="../x"),))
    with pytest.raises(TerminalBackendError):
        taskspec.task_options(bad, "t", PLACEMENT, "fp")


@pytest.mark.parametrize(
    ("pattern", "batch", "base"),
    [
        ("outputs/**", "outputs/**/*", "outputs"),
        ("logs/*.log", "logs/*.log", "logs"),
        ("a/b.json", "a/b.json", "a/b.json"),
    ],
)
def test_upload_patterns_map_to_batch_patterns(pattern: str, batch: str, base: str) -> None:
    assert taskspec.batch_pattern_for(pattern) == (batch, base)


def test_node_paths_put_std_streams_outside_the_working_directory() -> None:
    assert taskspec.node_file_path("outputs/x.json") == "wd/outputs/x.json"
    assert taskspec.node_file_path("logs/stderr.txt") == "stderr.txt"
    assert taskspec.node_file_path("logs/imagery_progress.log") == "wd/logs/imagery_progress.log"


@pytest.mark.parametrize(
    ("view", "state"),
    [
        (TaskView("active"), ComputeState.QUEUED),
        (TaskView("preparing"), ComputeState.QUEUED),
        (TaskView("running"), ComputeState.RUNNING),
        (TaskView("completed", exit_code=0, result="success"), ComputeState.SUCCEEDED),
        (TaskView("completed", exit_code=1, result="failure"), ComputeState.FAILED),
        (TaskView("completed", result="failure", failure_code="BlobDownloadMiscError"), ComputeState.FAILED),
    ],
)
def test_task_states_map_to_compute_states(view: TaskView, state: ComputeState) -> None:
    assert to_status(view).state is state


def test_a_requeued_task_is_noted_not_failed() -> None:
    status = to_status(TaskView("completed", exit_code=0, result="success", requeue_count=1))
    assert status.state is ComputeState.SUCCEEDED
    assert status.detail == "task requeued after node preemption (retry 1)"
    waiting = to_status(TaskView("active", requeue_count=2))
    assert waiting.detail == "task requeued after node preemption (retry 2); waiting for a node"


def test_failure_reason_has_exit_code_and_last_stderr_lines() -> None:
    view = TaskView("completed", exit_code=2, result="failure", failure_code="FailureExitCode", failure_message="x")
    tail = "\n".join(f"line {n}" for n in range(10)) + "\nerror: no scene AccountKey=abc123\n"
    reason = failure_reason(view, tail)
    assert reason.startswith("exit code 2: ")
    assert "error: no scene" in reason
    assert "line 9" in reason
    assert "line 1 " not in reason
    assert "abc123" not in reason  # redacted


def test_failure_reason_without_exit_code_uses_failure_info() -> None:
    view = TaskView("completed", result="failure", failure_code="BlobDownloadMiscError", failure_message="denied")
    assert failure_reason(view, None) == "BlobDownloadMiscError: denied"


def test_cancelled_is_never_success() -> None:
    status = to_status(TaskView("completed", exit_code=137, result="failure", failure_code="TaskEnded"), cancelled=True)
    assert status.state is ComputeState.CANCELLED


def test_last_lines_is_capped() -> None:
    assert len(last_lines("x" * 5000)) <= 400


def test_settings_validate_auth_and_urls() -> None:
    assert BatchSettings.model_validate({"BATCH_POOLS": "imagery=cpu"}).pools == {"imagery": "cpu"}
    with pytest.raises(ValueError, match="BATCH_ACCOUNT_KEY"):
        BatchSettings.model_validate({"BATCH_AUTH_MODE": "shared_key"})
    with pytest.raises(ValueError, match="https"):
        BatchSettings.model_validate({"BATCH_ACCOUNT_URL": "http://batch.example.com"})
    with pytest.raises(ValueError, match="shared_key"):
        BatchSettings.model_validate({"BATCH_ACCOUNT_URL": "http://127.0.0.1:9"})
    ok = {"BATCH_ACCOUNT_URL": "http://127.0.0.1:9", "BATCH_AUTH_MODE": "shared_key"}
    assert BatchSettings.model_validate({**ok, "BATCH_ACCOUNT_NAME": "a", "BATCH_ACCOUNT_KEY": "k"}).account_url
