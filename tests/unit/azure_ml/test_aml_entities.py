"""Spec → the real azure-ai-ml command job, for every environment mode and code upload.

Building entities makes no request, so these assert the public attributes of
what would be submitted: the ``Command`` that ``jobs.create_or_update``
receives and the ``CommandJob`` it becomes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from azure.ai.ml.entities import CommandJob, Environment, ManagedIdentityConfiguration  # noqa: TID251

from hastegeo.checkpoints.layout import (
    ACCOUNT_URL_VARIABLE,
    BLOB_VARIABLE,
    COMPUTE_IDENTITY,
    CONNECTION_VARIABLE,
    DIR_VARIABLE,
    IDENTITY_VARIABLE,
)
from hastegeo.compute.azure_ml.entities import (
    CONTAINER_WORKDIR,
    TAG_CODE_HASH,
    TAG_FINGERPRINT,
    build_command_job,
    code_snapshot_hash,
    job_environment,
    job_name,
)
from hastegeo.compute.contract import ComputeJobSpec
from hastegeo.utils.errors import ConfigurationError
from hastegeo.workdir import LEGACY_WORKDIR_VARIABLE, WORKDIR_VARIABLE
from tests.unit.azure_ml.aml_support import aml_settings, make_spec

DS = "azureml://datastores"


def _assert_common(job: object, spec: ComputeJobSpec) -> None:
    assert job.name == "haste-job-0001"  # type: ignore[attr-defined]
    assert job.compute == "haste-cpu"  # type: ignore[attr-defined]
    inputs, outputs = job.inputs, job.outputs  # type: ignore[attr-defined]
    assert inputs["input_0"].path == f"{DS}/haste_inputs/paths/p1/scene.tif"
    assert inputs["input_0"].type == "uri_file"
    assert inputs["input_1"].path == f"{DS}/haste_inputs/paths/p1/tiles/"
    assert inputs["input_1"].type == "uri_folder"
    assert outputs["outputs"].path == f"{DS}/haste_outputs/paths/p1/job-0001/outputs/"
    assert outputs["logs"].path == f"{DS}/haste_outputs/paths/p1/job-0001/logs/"
    assert outputs["outputs"].mode == "rw_mount"
    env_vars = job.environment_variables  # type: ignore[attr-defined]
    assert env_vars[WORKDIR_VARIABLE] == CONTAINER_WORKDIR
    assert env_vars[LEGACY_WORKDIR_VARIABLE] == CONTAINER_WORKDIR  # older images read only this name
    assert env_vars["HASTE_PARAMS_JSON"] == '{"bands": 3}'
    tags = job.tags  # type: ignore[attr-defined]
    assert tags["project"] == "p1"
    assert tags["haste_job_id"] == "job-0001"
    assert tags[TAG_FINGERPRINT] == spec.fingerprint()
    assert job.experiment_name == "haste-p1"  # type: ignore[attr-defined]
    assert job.display_name == "imagery job-0001"  # type: ignore[attr-defined]


def test_image_mode(spec: ComputeJobSpec) -> None:
    settings = aml_settings()
    node = build_command_job(spec, settings, environment=job_environment(settings, spec))
    job = node._to_job()  # what MLClient.jobs.create_or_update submits
    assert isinstance(job, CommandJob)
    for entity in (node, job):
        _assert_common(entity, spec)
        assert isinstance(entity.environment, Environment)
        assert entity.environment.image == "hasteacr.azurecr.io/haste/runtime:1.0"
        assert entity.code is None
        assert TAG_CODE_HASH not in entity.tags
    assert job.limits.timeout == spec.time_limit_s
    assert "${{inputs.input_0}}" in job.command
    assert 'ln -sfn "${{outputs.logs}}" "$HASTE_JOB_WORKDIR/logs"' in job.command
    assert job.command.endswith("exec python -m hastegeo.workloads.imagery")


def test_image_mode_falls_back_to_the_spec_image_and_refuses_none() -> None:
    settings = aml_settings(AML_IMAGE=None)
    with_image = make_spec(image="docker.io/library/python:3.11-slim")
    env = job_environment(settings, with_image)
    assert isinstance(env, Environment)
    assert env.image == "docker.io/library/python:3.11-slim"
    with pytest.raises(ConfigurationError, match="AML_IMAGE"):
        job_environment(settings, make_spec())


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        ("haste-runtime:4", "azureml:haste-runtime:4"),
        ("AzureML-sklearn-1.5@latest", "azureml:AzureML-sklearn-1.5@latest"),
    ],
)
def test_registered_environment_mode(spec: ComputeJobSpec, reference: str, expected: str) -> None:
    settings = aml_settings(AML_ENVIRONMENT_SOURCE="registered", AML_ENVIRONMENT=reference)
    job = build_command_job(spec, settings, environment=job_environment(settings, spec))._to_job()
    _assert_common(job, spec)
    assert job.environment == expected
    assert job.code is None


def test_build_context_mode(spec: ComputeJobSpec, tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM python:3.11-slim\n")
    settings = aml_settings(AML_ENVIRONMENT_SOURCE="build_context", AML_BUILD_CONTEXT=str(tmp_path))
    job = build_command_job(spec, settings, environment=job_environment(settings, spec))._to_job()
    _assert_common(job, spec)
    assert isinstance(job.environment, Environment)
    assert job.environment.image is None
    assert job.environment.build.path == str(tmp_path)
    assert job.environment.build.dockerfile_path == "Dockerfile"


def test_code_upload_mode(spec: ComputeJobSpec, tmp_path: Path) -> None:
    (tmp_path / "run.py").write_text("print('hi')\n")
    settings = aml_settings(AML_CODE_DIR=str(tmp_path))
    digest = code_snapshot_hash(tmp_path)
    job = build_command_job(
        spec, settings, environment=job_environment(settings, spec), code_dir=str(tmp_path), code_hash=digest
    )._to_job()
    _assert_common(job, spec)
    assert job.code == str(tmp_path)
    assert job.tags[TAG_CODE_HASH] == digest


def test_code_hash_respects_amlignore_and_changes_with_content(tmp_path: Path) -> None:
    (tmp_path / "run.py").write_text("print('hi')\n")
    first = code_snapshot_hash(tmp_path)
    (tmp_path / ".amlignore").write_text("scratch/\n")
    (tmp_path / "scratch").mkdir()
    (tmp_path / "scratch" / "big.bin").write_bytes(b"x" * 100)
    with_ignored = code_snapshot_hash(tmp_path)
    (tmp_path / "run.py").write_text("print('changed')\n")
    changed = code_snapshot_hash(tmp_path)
    assert len(first) == 64
    assert changed != with_ignored
    # The ignored folder does not count; the .amlignore file itself does (as in Azure ML's own hash).
    (tmp_path / "scratch" / "big.bin").write_bytes(b"y" * 200)
    assert code_snapshot_hash(tmp_path) == changed


def test_names_and_missing_compute() -> None:
    assert job_name(make_spec(name="Haste Job/42")) == "haste-job-42"
    assert job_name(make_spec(name="_x")) == "x"
    with pytest.raises(ConfigurationError, match="AML_COMPUTE"):
        build_command_job(
            make_spec(workload="training"), aml_settings(AML_COMPUTE="imagery=cpu"), environment="azureml:e:1"
        )


def test_inputs_with_nested_dest_are_linked_safely() -> None:
    from hastegeo.compute.contract import BlobLocation, InputFile

    spec = make_spec(inputs=(InputFile(source=BlobLocation(container="c", path="a b/x.tif"), dest="dir x/it's.tif"),))
    job = build_command_job(spec, aml_settings(), environment="azureml:e:1")._to_job()
    assert job.inputs["input_0"].path == f"{DS}/c/paths/a b/x.tif"
    assert "'dir x/it'\"'\"'s.tif'" in job.command


def test_a_spec_cannot_move_the_working_directory_variables() -> None:
    """The backend owns both names, as on Batch: a spec's env cannot point them elsewhere."""
    spec = make_spec(env={WORKDIR_VARIABLE: "/elsewhere", LEGACY_WORKDIR_VARIABLE: "/other", "HASTE_JOB_ID": "j"})
    job = build_command_job(spec, aml_settings(), environment="azureml:haste-runtime:1")
    env_vars = job.environment_variables  # type: ignore[attr-defined]
    assert (env_vars[WORKDIR_VARIABLE], env_vars[LEGACY_WORKDIR_VARIABLE]) == (CONTAINER_WORKDIR, CONTAINER_WORKDIR)
    assert env_vars["HASTE_JOB_ID"] == "j"


def test_every_job_gets_a_checkpoint_folder_on_the_nodes_disk_and_copies_it_with_the_clusters_identity() -> None:
    """ADR 0044: the runtime copies ``$HASTE_CHECKPOINT_DIR`` to the spec's location with the cluster's identity."""
    location = "haste-outputs/jobs/job-0001/checkpoints"
    spec = make_spec(env={"HASTE_JOB_ID": "job-0001", BLOB_VARIABLE: location})
    node = build_command_job(
        spec,
        aml_settings(),
        environment="azureml:haste-runtime:1",
        blob_account_url="https://sthaste.blob.core.windows.net",
    )
    for entity in (node, node._to_job()):
        env_vars = entity.environment_variables  # type: ignore[attr-defined]
        assert env_vars[DIR_VARIABLE] == f"{CONTAINER_WORKDIR}/checkpoints"  # not a mount: the node's own disk
        assert env_vars[BLOB_VARIABLE] == location
        assert env_vars[ACCOUNT_URL_VARIABLE] == "https://sthaste.blob.core.windows.net"
        assert env_vars[IDENTITY_VARIABLE] == COMPUTE_IDENTITY
        assert CONNECTION_VARIABLE not in env_vars  # never a key: the identity is the access
        assert isinstance(entity.identity, ManagedIdentityConfiguration)  # type: ignore[attr-defined]
    assert node._to_job()._to_dict()["identity"] == {"type": "managed_identity"}


def test_a_spec_without_a_checkpoint_location_gets_the_folder_and_no_storage_access(spec: ComputeJobSpec) -> None:
    job = build_command_job(spec, aml_settings(), environment="azureml:haste-runtime:1", blob_account_url="https://a")
    env_vars = job.environment_variables  # type: ignore[attr-defined]
    assert env_vars[DIR_VARIABLE] == f"{CONTAINER_WORKDIR}/checkpoints"
    assert not {BLOB_VARIABLE, ACCOUNT_URL_VARIABLE, IDENTITY_VARIABLE} & set(env_vars)
