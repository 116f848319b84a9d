"""How every backend tells a workload where its files are: the working-directory variables.

Every backend exports both names to the workload (:func:`workdir_env`, or Batch's own
variable and a copy of it); a workload reads the first one set
(:func:`hastegeo.workloads._run.harness.resolve_workdir`). Outside ``hastegeo.compute`` and
standard library only: a workload's launcher imports it and must not load the adapters,
and so does every local job's process.
"""

WORKDIR_VARIABLE = "HASTE_JOB_WORKDIR"
LEGACY_WORKDIR_VARIABLE = "AZ_BATCH_TASK_WORKING_DIR"  # images built before HASTE_JOB_WORKDIR read only Batch's name


def workdir_env(path: str) -> dict[str, str]:
    """Both names, set to ``path``."""
    return {WORKDIR_VARIABLE: path, LEGACY_WORKDIR_VARIABLE: path}
