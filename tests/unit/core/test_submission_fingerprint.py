"""What "the same submission" means: the one fingerprint, and the legacy form jobs submitted before it carry.

The two literals below were computed once, from this spec, by the code of the
release before the one fingerprint (``git show ad09f40^``): ``LEGACY`` by
``azure_ml/entities.py:fingerprint`` (the local adapter's ``_fingerprint`` was
the same digest of the whole spec), ``CURRENT`` by
``azure_batch/naming.py:fingerprint``. A job created then carries one of them,
so a spec or digest change that alters either fails here first.
"""

from __future__ import annotations

from hastegeo.compute.contract import BlobLocation, ComputeJobSpec, InputFile
from hastegeo.compute.fingerprint import legacy_fingerprint

LEGACY = "855f940066d20ea54d6ac43bfddbd068"
CURRENT = "9ff35794aa673496cc998a32f88dd6f7"


SPEC = ComputeJobSpec(
    job_id="job-0001",
    name="haste-job-0001",
    workload="imagery",
    entrypoint=("python", "-m", "hastegeo.workflows.imagery"),
    args=("--tiles", "4"),
    env={"HASTE_PARAMS_JSON": '{"bands": 3}', "HASTE_JOB_ID": "job-0001"},
    inputs=(
        InputFile(source=BlobLocation(container="haste-inputs", path="p1/scene.tif"), dest="scene.tif"),
        InputFile(source=BlobLocation(container="haste-inputs", path="p1/tiles"), dest="tiles", is_prefix=True),
    ),
    output=BlobLocation(container="haste-outputs", path="p1/job-0001"),
    labels={"project": "p1", "job": "job-0001", "workload": "imagery"},
)


def _spec(**changes: object) -> ComputeJobSpec:
    return SPEC.model_copy(update=changes)


def test_the_forms_older_releases_stored_are_reproduced() -> None:
    spec = _spec()
    assert spec.fingerprint() == CURRENT
    assert legacy_fingerprint(spec) == LEGACY


def test_a_job_stored_with_the_current_or_the_legacy_form_is_the_same_submission() -> None:
    spec = _spec()
    assert spec.is_same_submission(CURRENT)
    assert spec.is_same_submission(LEGACY)


def test_another_spec_or_no_fingerprint_is_not_the_same_submission() -> None:
    other = _spec(args=("--tiles", "8"))
    assert not other.is_same_submission(CURRENT)
    assert not other.is_same_submission(LEGACY)
    assert not _spec(job_id="job-0002").is_same_submission(LEGACY)
    assert not _spec().is_same_submission(None)
    assert not _spec().is_same_submission("")


def test_labels_change_only_the_legacy_form() -> None:
    relabelled = _spec(labels={"project": "p2"})
    assert relabelled.is_same_submission(CURRENT)  # the one fingerprint ignores labels
    assert not relabelled.is_same_submission(LEGACY)  # the whole-spec digest did not


def test_a_job_submitted_with_the_module_before_workload_folders_is_the_same_submission() -> None:
    """SPEC runs ``hastegeo.workflows.imagery``, as compute did before workload folders (docs/adr/0037): a job
    created then carries CURRENT or LEGACY, and the same spec built today, naming the folder, binds to it."""
    today = _spec(entrypoint=("python", "-m", "hastegeo.workloads.imagery"))
    assert today.fingerprint() != CURRENT
    assert today.is_same_submission(CURRENT)
    assert today.is_same_submission(LEGACY)
    assert not _spec(entrypoint=("python", "-m", "hastegeo.workloads.training")).is_same_submission(CURRENT)
    assert not today.model_copy(update={"workload": "training"}).is_same_submission(CURRENT)
