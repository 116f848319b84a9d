"""Test processors: real workloads made of a few lines of Python, for pipeline tests."""

from __future__ import annotations

import json

from hastegeo.compute.contract import BlobLocation, ComputeJobSpec
from hastegeo.models.job import Job, JobInput, JobRequest
from hastegeo.workloads.processor import Params, Processor, SpecInputs, spec_name

# Writes one output, a manifest and a progress line, like every real workload.
SUCCEED = """
import hashlib, json, os, pathlib, time
work = pathlib.Path(os.environ["HASTE_JOB_WORKDIR"])
time.sleep(float(os.environ.get("SLEEP", "0")))
(work / "outputs" / "result.txt").write_text("done")
(work / "logs" / "script_progress.log").write_text("2026-01-01T00:00:00Z script finished\\n")
data = (work / "outputs" / "result.txt").read_bytes()
manifest = {"files": [{"name": "result.txt", "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}]}
(work / "outputs" / "script_manifest.json").write_text(json.dumps(manifest))
"""

# Reports progress while it runs, then succeeds like SUCCEED.
PROGRESS = """
import os, pathlib, time
log = pathlib.Path(os.environ["HASTE_JOB_WORKDIR"]) / "logs" / "script_progress.log"
with log.open("a") as out:
    for step in range(1, 4):
        out.write(f"2026-01-01T00:00:0{step}Z step {step} of 3\\n")
        out.flush()
        time.sleep(0.4)
""" + SUCCEED.replace(
    '.write_text("2026-01-01T00:00:00Z script finished\\n")', '.open("a").write("script finished\\n")'
)

FAIL = """
import sys
print("loading model", file=sys.stderr)
print("ValueError: band 4 is missing", file=sys.stderr)
sys.exit(3)
"""


class ScriptParams(Params):
    script: str = SUCCEED
    sleep: float = 0


class ScriptProcessor(Processor):
    """Runs ``parameters.script`` with the job's interpreter; post-processing is the real base class."""

    workload = "script"
    params_model = ScriptParams

    def build_spec(self, job: Job, where: SpecInputs, output: BlobLocation) -> ComputeJobSpec:
        params = ScriptParams.model_validate(job.parameters)
        return ComputeJobSpec(
            job_id=job.id,
            name=spec_name(job.id),
            workload="artifacts",
            entrypoint=("python", "-c", params.script),
            env={"SLEEP": str(params.sleep), "HASTE_PARAMS_JSON": json.dumps(job.parameters)},
            inputs=tuple(self.stage_inputs(job, where)),
            output=output,
            time_limit_s=60,
        )


class ChainingScriptProcessor(ScriptProcessor):
    """A script job that, like training, starts an artifacts job over its outputs when it succeeds."""

    def follow_ons(self, job: Job) -> list[JobRequest]:
        return [JobRequest(workload="artifacts", project_id=job.project_id, inputs=[JobInput(job_id=job.id)])]
