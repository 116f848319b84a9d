"""Spec → Azure ML entities. Pure: builds SDK objects, makes no request and touches no service.

The job's working directory follows the cross-backend contract
(:mod:`hastegeo.workloads._run.harness`): Azure ML mounts each input read-only and
the two outputs read-write on datastore paths, and the command links them
under ``$HASTE_JOB_WORKDIR`` as ``inputs/<dest>``, ``outputs`` and ``logs``
before it ``exec``\\ s the workload; ``AZ_BATCH_TASK_WORKING_DIR`` names the
same directory, as on Batch, for images that read only that name. The outputs
are the spec's blob prefix (``<output.path>/outputs/`` and ``/logs/`` in
``output.container``), so post-processing reads the same blobs as on every
other backend.

The checkpoint folder, ``$HASTE_CHECKPOINT_DIR``, is ``checkpoints`` in that
working directory, on the node's own disk, not a mount: the workload's runtime
puts the latest checkpoint back there before the workload starts and copies it
to ``<output.path>/checkpoints/`` while it runs, with the identity the cluster
gives its jobs, as on Batch (ADR 0044). The job runs with that identity
(``identity=ManagedIdentityConfiguration()``), so its mounts and its
checkpoint copies use the same one.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

from azure.ai.ml import Input, Output, command
from azure.ai.ml._utils._asset_utils import get_content_hash, get_ignore_file
from azure.ai.ml.entities import BuildContext, Environment, ManagedIdentityConfiguration
from azure.ai.ml.entities._builders.command import Command

from hastegeo.checkpoints.access import identity_env
from hastegeo.checkpoints.layout import CHECKPOINTS, COMPUTE_IDENTITY
from hastegeo.checkpoints.layout import DIR_VARIABLE as CHECKPOINT_DIR_VARIABLE
from hastegeo.compute.azure_ml.events import TAG_JOB_ID
from hastegeo.compute.azure_ml.settings import AmlSettings, EnvironmentSource, parse_environment_reference
from hastegeo.compute.azure_ml.streams import exec_lines
from hastegeo.compute.contract import ComputeJobSpec
from hastegeo.profiles import Tier
from hastegeo.utils.errors import ConfigurationError
from hastegeo.workdir import WORKDIR_VARIABLE, workdir_env

# Where the workload's working directory lives inside the Azure ML container.
CONTAINER_WORKDIR = "/tmp/haste-job"  # noqa: S108 - a per-job container path, not a shared host temp dir
CONTAINER_CHECKPOINTS = f"{CONTAINER_WORKDIR}/{CHECKPOINTS}"
TAG_FINGERPRINT = "haste_fingerprint"
TAG_CODE_HASH = "haste_code_sha256"
TAG_SOURCE = "haste_source"
OUTPUT_FOLDERS = ("outputs", "logs")


def job_name(spec: ComputeJobSpec) -> str:
    """The Azure ML job name: the spec's idempotency name, made legal (lowercase letters, digits, '-', '_')."""
    name = re.sub(r"[^a-z0-9_-]+", "-", spec.name.lower()).strip("-_")
    if not name or not name[0].isalnum():
        name = f"haste-{name}"
    return name[:255]


def datastore_uri(settings: AmlSettings, container: str, path: str, *, folder: bool) -> str:
    """``azureml://datastores/<datastore>/paths/<path>`` for a blob (or a prefix when ``folder``)."""
    relative = path.strip("/")
    suffix = "/" if folder and relative else ""
    return f"azureml://datastores/{settings.datastore_for(container)}/paths/{relative}{suffix}"


def experiment_name(settings: AmlSettings, spec: ComputeJobSpec) -> str:
    """``<AML_EXPERIMENT>-<project>`` (or ``-<workload>`` when the spec has no project label)."""
    group = spec.labels.get("project") or spec.workload
    return re.sub(r"[^A-Za-z0-9_-]+", "-", f"{settings.experiment}-{group}")[:255]


def job_tags(spec: ComputeJobSpec, code_hash: str | None) -> dict[str, str]:
    """The spec's labels (project, job, workload) plus our job id, fingerprint and code hash."""
    tags = {**spec.labels, TAG_JOB_ID: spec.job_id, TAG_FINGERPRINT: spec.fingerprint()}
    if code_hash:
        tags[TAG_CODE_HASH] = code_hash
    return tags


def code_snapshot_hash(code_dir: str | Path) -> str:
    """The content hash Azure ML records for a code snapshot of ``code_dir`` (``.amlignore`` honoured)."""
    digest = get_content_hash(str(code_dir), get_ignore_file(str(code_dir)))
    if not digest:
        raise ConfigurationError(f"AML_CODE_DIR {str(code_dir)!r} is empty or unreadable")
    return digest


def source_description(settings: AmlSettings) -> str:
    """What an Environment is built from: ``build:<context hash>`` or ``image:<reference>``.

    A configured build context wins over an image: it is the more specific choice.

    Raises:
        ConfigurationError: neither a build context nor an image is configured.
    """
    if settings.build_context:
        return f"build:{code_snapshot_hash(settings.build_context)[:16]}"
    if not settings.image:
        raise ConfigurationError(
            "Azure ML needs an image: set AML_IMAGE (or AML_BUILD_CONTEXT with AML_ENVIRONMENT_SOURCE=build_context)"
        )
    return f"image:{settings.image}"


def environment_definition(
    settings: AmlSettings, *, name: str | None = None, version: str | None = None
) -> Environment:
    """An Environment from the configured build context or image; anonymous unless ``name`` is given."""
    source = source_description(settings)
    tags = {TAG_SOURCE: source} if name else None
    if source.startswith("build:"):
        build = BuildContext(path=settings.build_context, dockerfile_path=settings.dockerfile)
        return Environment(name=name, version=version, build=build, tags=tags)
    return Environment(name=name, version=version, image=source.removeprefix("image:"), tags=tags)


def job_environment(settings: AmlSettings, spec: ComputeJobSpec) -> str | Environment:
    """The ``environment=`` of the job for the configured source (no request is made).

    Registered: ``azureml:name:version`` or ``azureml:name@label``; otherwise
    :func:`inline_environment`.
    """
    if settings.environment_source is EnvironmentSource.REGISTERED:
        name, version, label = parse_environment_reference(settings.environment)
        return f"azureml:{name}:{version}" if version else f"azureml:{name}@{label}"
    return inline_environment(settings, spec)


def inline_environment(settings: AmlSettings, spec: ComputeJobSpec) -> Environment:
    """An anonymous Environment: built from ``AML_BUILD_CONTEXT`` (build_context source), else the image
    ``AML_IMAGE`` or, when that is empty, the spec's image (image source, the default).

    Raises:
        ConfigurationError: image source and no image anywhere.
    """
    if settings.environment_source is EnvironmentSource.BUILD_CONTEXT:
        return environment_definition(settings)
    image = settings.image or spec.image
    if not image:
        raise ConfigurationError("Azure ML image mode needs an image: set AML_IMAGE or give the job spec an image")
    return Environment(image=image)


def input_name(index: int) -> str:
    return f"input_{index}"


def job_command(spec: ComputeJobSpec) -> str:
    """The shell command: link mounts into the working directory, then exec the workload's argv."""
    workdir = "$" + WORKDIR_VARIABLE
    lines = ["set -e", f'mkdir -p "{workdir}/inputs"']
    for folder in OUTPUT_FOLDERS:
        lines.append(f'ln -sfn "${{{{outputs.{folder}}}}}" "{workdir}/{folder}"')
    for index, item in enumerate(spec.inputs):
        dest = shlex.quote(item.dest.strip("/"))
        lines.append(f'mkdir -p "$(dirname "{workdir}/inputs/"{dest})"')
        lines.append(f'ln -sfn "${{{{inputs.{input_name(index)}}}}}" "{workdir}/inputs/"{dest}')
    lines += exec_lines(spec.argv, f'"{workdir}/logs"')  # each stream in a file of its own too (.streams)
    return "\n".join(lines)


def checkpoint_env(spec: ComputeJobSpec, blob_account_url: str) -> dict[str, str]:
    """The checkpoint folder on the node's disk, and (for a spec that names a checkpoint location) the account
    and identity the runtime copies it with: the cluster's own (ADR 0044)."""
    return {
        CHECKPOINT_DIR_VARIABLE: CONTAINER_CHECKPOINTS,
        **identity_env(spec.env, blob_account_url, COMPUTE_IDENTITY),
    }


def build_command_job(
    spec: ComputeJobSpec,
    settings: AmlSettings,
    *,
    environment: str | Environment,
    code_dir: str | None = None,
    code_hash: str | None = None,
    blob_account_url: str = "",
) -> Command:
    """The Azure ML command job for ``spec``, ready for ``jobs.create_or_update``; ``blob_account_url`` is the
    account of its outputs container, where its checkpoints are copied (empty: they are not).

    Raises:
        ConfigurationError: no compute target is configured for the workload.
    """
    placement = settings.placement(spec.workload, spec.profile)
    if not placement.compute and spec.profile:
        raise ConfigurationError(f"AML_PROFILES has no profile {spec.profile!r} for workload {spec.workload!r}")
    if not placement.compute:
        raise ConfigurationError(f"AML_COMPUTE has no compute target for workload {spec.workload!r}")
    inputs: dict[str, Any] = {
        input_name(index): Input(
            type="uri_folder" if item.is_prefix else "uri_file",
            path=datastore_uri(settings, item.source.container, item.source.path, folder=item.is_prefix),
            mode="ro_mount",
        )
        for index, item in enumerate(spec.inputs)
    }
    outputs: dict[str, Any] = {
        folder: Output(
            type="uri_folder",
            path=datastore_uri(settings, spec.output.container, spec.output.child(folder), folder=True),
            mode="rw_mount",
        )
        for folder in OUTPUT_FOLDERS
    }
    return command(
        name=job_name(spec),
        display_name=f"{spec.workload} {spec.job_id}",
        experiment_name=experiment_name(settings, spec),
        description=f"haste {spec.workload} job {spec.job_id}",
        tags=job_tags(spec, code_hash),
        command=job_command(spec),
        code=code_dir or None,
        environment=environment,
        # Both names, as on Batch: images built before HASTE_JOB_WORKDIR read only the legacy one.
        environment_variables={**spec.env, **workdir_env(CONTAINER_WORKDIR), **checkpoint_env(spec, blob_account_url)},
        identity=ManagedIdentityConfiguration(),  # the cluster's identity: mounts and checkpoint copies alike
        compute=placement.compute,
        inputs=inputs,
        outputs=outputs,
        timeout=spec.time_limit_s,
        # The profile's shape and tier (ADR 0043); a job without a profile leaves them to its compute.
        instance_type=placement.instance_type,
        instance_count=placement.instance_count,
        job_tier="Spot" if placement.tier is Tier.SPOT else None,
    )
