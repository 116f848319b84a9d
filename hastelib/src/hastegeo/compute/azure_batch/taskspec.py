"""Translate a :class:`ComputeJobSpec` into Batch job and task definitions. Pure: builds models, sends nothing.

Layout on the node (Batch's task directory)::

    <task dir>/stdout.txt, stderr.txt      → <prefix>/logs/stdout.txt, logs/stderr.txt
    <task dir>/wd/  = $AZ_BATCH_TASK_WORKING_DIR = $HASTE_JOB_WORKDIR
        inputs/   resource files, read with the pool's managed identity
        outputs/  → <prefix>/outputs/…   (uploaded on task completion, success or not)
        logs/     → <prefix>/logs/…
        checkpoints/ = $HASTE_CHECKPOINT_DIR, copied to <prefix>/checkpoints/ by the workload's runtime
                     while the task runs, with the pool's managed identity (ADR 0044)
        params.json  written from $HASTE_PARAMS_JSON when the spec carries it
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import quote

from azure.batch import models

from hastegeo.checkpoints.access import identity_env
from hastegeo.checkpoints.layout import CHECKPOINTS
from hastegeo.checkpoints.layout import DIR_VARIABLE as CHECKPOINT_DIR_VARIABLE
from hastegeo.compute.contract import ComputeJobSpec, InputFile
from hastegeo.profiles import SPOT_RERUNS, Tier
from hastegeo.utils.errors import TerminalBackendError
from hastegeo.workdir import LEGACY_WORKDIR_VARIABLE, WORKDIR_VARIABLE

PARAMS_VARIABLE = "HASTE_PARAMS_JSON"
FINGERPRINT_VARIABLE = "HASTE_SUBMISSION"
FINGERPRINT_METADATA = "haste-fingerprint"
JOB_ID_METADATA = "haste-job-id"
WORKDIR_ON_NODE = "wd"  # Batch's name for the task working directory inside the task directory
STD_STREAMS = ("stdout.txt", "stderr.txt")
STD_LOG_PATHS = tuple(f"logs/{name}" for name in STD_STREAMS)  # where the streams are in blob
_STAGING = "inputs/.staging"
_WILDCARDS = frozenset("*?[")
# Who a task runs as. On Linux, Batch runs a container task with the task user's uid and gid
# (Batch docs, "Run container applications on Azure Batch": Batch maps the user/group permission
# to the container), and that user owns the task working directory Batch mounts and makes the
# container's working directory (TASK_WORKING_DIRECTORY). A non-admin auto-user, said explicitly
# so no pool or job default can turn it into root: never root, and the workdir is writable. The
# image's own USER 10001 applies wherever no such mapping happens (docker run, Azure ML).
TASK_USER = models.UserIdentity(
    auto_user=models.AutoUserSpecification(
        scope=models.AutoUserScope.TASK, elevation_level=models.ElevationLevel.NON_ADMIN
    )
)


@dataclass(frozen=True)
class Placement:
    """Where and how a task runs: the settings-derived half of a task definition."""

    pool_id: str
    image: str
    blob_account_url: str  # e.g. https://account.blob.core.windows.net (no trailing slash)
    identity_resource_id: str
    registry: str = ""
    retention_s: int = 86400
    tier: Tier = Tier.DEDICATED  # of the pool's nodes (the job's profile, ADR 0043)

    @property
    def retries(self) -> int:
        """Batch requeues a task its spot node was taken from without counting it; a task that saw the
        eviction start and exited non-zero is retried a few times as well, so it is run again, not failed."""
        return SPOT_RERUNS if self.tier is Tier.SPOT else 0


def job_options(spec: ComputeJobSpec, job_id: str, pool_id: str, fingerprint: str) -> models.BatchJobCreateOptions:
    """One job per submission, created with ``noaction`` (a job with no tasks counts as complete)."""
    return models.BatchJobCreateOptions(
        id=job_id,
        display_name=spec.name[:1024],
        pool_info=models.BatchPoolInfo(pool_id=pool_id),
        all_tasks_complete_mode=models.BatchAllTasksCompleteMode.NO_ACTION,
        metadata=[
            models.BatchMetadataItem(name=FINGERPRINT_METADATA, value=fingerprint),
            models.BatchMetadataItem(name=JOB_ID_METADATA, value=spec.job_id),
        ],
    )


def terminate_when_done() -> models.BatchJobUpdateOptions:
    return models.BatchJobUpdateOptions(all_tasks_complete_mode=models.BatchAllTasksCompleteMode.TERMINATE_JOB)


def task_options(
    spec: ComputeJobSpec, task_id: str, placement: Placement, fingerprint: str
) -> models.BatchTaskCreateOptions:
    identity = models.BatchNodeIdentityReference(resource_id=placement.identity_resource_id)
    registry = (
        models.ContainerRegistryReference(registry_server=placement.registry, identity_reference=identity)
        if placement.registry
        else None
    )
    env = {name: value for name, value in spec.env.items() if name not in (WORKDIR_VARIABLE, LEGACY_WORKDIR_VARIABLE)}
    env[FINGERPRINT_VARIABLE] = fingerprint
    # The runtime copies checkpoints with the identity the output files use.
    env.update(identity_env(env, placement.blob_account_url, placement.identity_resource_id))
    return models.BatchTaskCreateOptions(
        id=task_id,
        display_name=spec.name[:1024],
        command_line=command_line(spec),
        container_settings=models.BatchTaskContainerSettings(
            image_name=placement.image,
            registry=registry,
            working_directory=models.ContainerWorkingDirectory.TASK_WORKING_DIRECTORY,
        ),
        user_identity=TASK_USER,
        environment_settings=[models.EnvironmentSetting(name=k, value=v) for k, v in sorted(env.items())],
        resource_files=[_resource_file(item, index, placement, identity) for index, item in enumerate(spec.inputs)],
        output_files=output_files(spec, placement, identity),
        constraints=models.BatchTaskConstraints(
            max_wall_clock_time=timedelta(seconds=spec.time_limit_s),
            retention_time=timedelta(seconds=placement.retention_s),
            max_task_retry_count=max(spec.retry_budget, placement.retries),
        ),
    )


def command_line(spec: ComputeJobSpec) -> str:
    """``/bin/sh -c '…'``: set the workdir variables, stage prefix inputs, write params.json, exec argv."""
    if not spec.argv:
        raise TerminalBackendError("The job has no command to run", backend="azure_batch")
    lines = [
        "set -e",
        f'export {WORKDIR_VARIABLE}="${LEGACY_WORKDIR_VARIABLE}"',
        f'cd "${WORKDIR_VARIABLE}"',
        f'export {CHECKPOINT_DIR_VARIABLE}="${WORKDIR_VARIABLE}/{CHECKPOINTS}"',
        f"mkdir -p inputs outputs logs {CHECKPOINTS}",
    ]
    for index, item in enumerate(spec.inputs):
        if item.is_prefix:  # Batch keeps full blob names: move <staging>/<prefix> to inputs/<dest>
            staged = shlex.quote(f"{_STAGING}/{index}/{_prefix(item)}")
            target = shlex.quote(f"inputs/{_dest(item)}")
            lines.append(
                f'if [ -d {staged} ]; then mkdir -p "$(dirname {target})"; rm -rf {target}; mv {staged} {target}; fi'
            )
    if any(item.is_prefix for item in spec.inputs):
        lines.append(f"rm -rf {_STAGING}")
    if PARAMS_VARIABLE in spec.env:
        lines.append(f"printf '%s' \"${PARAMS_VARIABLE}\" > params.json")
    lines.append(f"exec {shlex.join(spec.argv)}")
    return "/bin/sh -c " + shlex.quote("\n".join(lines))


def output_files(
    spec: ComputeJobSpec, placement: Placement, identity: models.BatchNodeIdentityReference
) -> list[models.OutputFile]:
    """One OutputFile per upload pattern (``outputs/**`` → ``<prefix>/outputs/…``) plus stdout/stderr → logs/."""
    container_url = f"{placement.blob_account_url}/{spec.output.container}"
    pairs: list[tuple[str, str]] = []
    for pattern in spec.upload_patterns:
        batch_pattern, base = batch_pattern_for(pattern)
        pairs.append((batch_pattern, spec.output.child(base) if base else spec.output.path))
    pairs += [(f"../{name}", spec.output.child(f"logs/{name}")) for name in STD_STREAMS]
    condition = models.OutputFileUploadCondition.TASK_COMPLETION
    return [
        models.OutputFile(
            file_pattern=pattern,
            destination=models.OutputFileDestination(
                container=models.OutputFileBlobContainerDestination(
                    container_url=container_url, path=path, identity_reference=identity
                )
            ),
            upload_options=models.OutputFileUploadConfiguration(upload_condition=condition),
        )
        for pattern, path in pairs
    ]


def batch_pattern_for(pattern: str) -> tuple[str, str]:
    """Our pattern (``outputs/**``) → Batch's (``outputs/**/*``) and the wildcard-free base (``outputs``)."""
    segments = pattern.strip("/").split("/")
    base: list[str] = []
    for segment in segments:
        if _WILDCARDS & set(segment):
            break
        base.append(segment)
    batch = "/".join(segments) + ("/*" if segments[-1] == "**" else "")
    return batch, "/".join(base)  # no wildcard at all: a single file, uploaded to <prefix>/<pattern>


def node_file_path(path: str) -> str:
    """Where a workdir-relative path lives in the task directory (stdout/stderr sit outside ``wd``)."""
    relative = path.lstrip("/")
    if relative in STD_LOG_PATHS:
        return relative.removeprefix("logs/")
    return f"{WORKDIR_ON_NODE}/{relative}"


def _resource_file(
    item: InputFile, index: int, placement: Placement, identity: models.BatchNodeIdentityReference
) -> models.ResourceFile:
    container_url = f"{placement.blob_account_url}/{item.source.container}"
    if item.is_prefix:
        return models.ResourceFile(
            storage_container_url=container_url,
            blob_prefix=_prefix(item) + "/",
            file_path=f"{_STAGING}/{index}",
            identity_reference=identity,
        )
    return models.ResourceFile(
        http_url=f"{container_url}/{quote(item.source.path.lstrip('/'))}",
        file_path=f"inputs/{_dest(item)}",
        identity_reference=identity,
    )


def _prefix(item: InputFile) -> str:
    return item.source.path.strip("/")


def _dest(item: InputFile) -> str:
    dest = item.dest.strip("/")
    if not dest or ".." in dest.split("/"):
        raise TerminalBackendError(f"Input destination {item.dest!r} must stay inside inputs/", backend="azure_batch")
    return dest
