"""What makes a submission *this* one: the spec fingerprint a provider job carries, and the forms still accepted.

Every backend stores :func:`fingerprint` with the job it creates (Batch: job
metadata and a task variable; Azure ML: the ``haste_fingerprint`` tag; local:
``spec.json``) and binds a repeated submit to an existing job only when
:meth:`ComputeJobSpec.is_same_submission` accepts what that job carries.

Legacy form: before the one cross-backend fingerprint, local and Azure ML
stored :func:`legacy_fingerprint`, a digest of the whole spec (labels
included); Batch already stored today's form. It is still accepted so that a
submit redelivered across an upgrade binds to the job it created instead of
being refused as "not ours". A submit is redelivered only while its job waits
to be submitted (``HASTE_QUEUED_DEADLINE_S``, one hour by default; a queue
message lives seven days at most), so the legacy form may be dropped from the
first release after 2027-03-01. It digests the spec's fields as they were in
release 0.1; ``tests/unit/core/test_submission_fingerprint.py`` holds a value
computed once by the old code and fails if a field change alters it.

Before workload folders (docs/adr/0037), compute ran ``python -m
hastegeo.workflows.<workload>`` where it now runs ``python -m
hastegeo.workloads.<workload>``; a job submitted with the old argv carries the
fingerprints of that argv, accepted too for the same reason and as long.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hastegeo.compute.contract import ComputeJobSpec


def fingerprint(spec: ComputeJobSpec) -> str:
    """The identity fields only (job id, name, workload, image, argv, output, a declared profile): labels may
    change. The implicit profile adds nothing, so a job without one keeps the fingerprint it had before profiles."""
    identity: dict[str, object] = {"jobId": spec.job_id, "name": spec.name, "workload": spec.workload}
    identity.update(image=spec.image, argv=list(spec.argv), output=[spec.output.container, spec.output.path])
    if spec.profile is not None:
        identity["profile"] = spec.profile
    return _digest(json.dumps(identity, sort_keys=True, separators=(",", ":")))


def legacy_fingerprint(spec: ComputeJobSpec) -> str:
    """The whole-spec digest local and Azure ML jobs carry when submitted before the one fingerprint."""
    return _digest(spec.model_dump_json(exclude={"profile"} if spec.profile is None else None))


def accepted(spec: ComputeJobSpec) -> tuple[str, ...]:
    """Every fingerprint a job submitted for ``spec`` may carry, the current form first."""
    forms = (fingerprint(spec), legacy_fingerprint(spec))
    before = _before_workload_folders(spec)
    return forms if before is None else (*forms, fingerprint(before), legacy_fingerprint(before))


def _before_workload_folders(spec: ComputeJobSpec) -> ComputeJobSpec | None:
    """``spec`` as a release before workload folders built it (its workload's old module), if it differs."""
    argv = spec.entrypoint
    if argv[1:3] != ("-m", f"hastegeo.workloads.{spec.workload}"):
        return None
    return spec.model_copy(update={"entrypoint": (argv[0], "-m", f"hastegeo.workflows.{spec.workload}", *argv[3:])})


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]
