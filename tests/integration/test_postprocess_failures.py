"""Post-processing's failure paths through the real pipeline: local processes, Azurite, the base processor.

Each workload below is a few lines of Python that finish with exit code 0 but
leave outputs that do not hold up; the job must fail with one readable reason
that names the file and what is wrong with it, and the history must end with it.
"""

from __future__ import annotations

import pytest

from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.pipeline.accept import parse_request
from hastegeo.runtime import Runtime
from hastegeo.store.queues import JobMessage
from tests.conftest import RuntimeFactory
from tests.support.processors import ScriptProcessor

from .conftest import drive, request

pytestmark = pytest.mark.azurite

# Writes outputs/result.txt ("done", 4 bytes), then a manifest built from MANIFEST (a Python expression).
TEMPLATE = """
import hashlib, json, os, pathlib
work = pathlib.Path(os.environ["HASTE_JOB_WORKDIR"])
data = b"done"
(work / "outputs" / "result.txt").write_bytes(data)
sha = hashlib.sha256(data).hexdigest()
manifest = MANIFEST
if manifest is not None:
    text = manifest if isinstance(manifest, str) else json.dumps(manifest)
    (work / "outputs" / "script_manifest.json").write_text(text)
"""


def script(manifest: str) -> str:
    return TEMPLATE.replace("MANIFEST", manifest)


def run(runtime: Runtime, code: str) -> Job:
    runtime.deps.processors["artifacts"] = ScriptProcessor()
    job = runtime.acceptor.accept(parse_request(request(inputs=[], parameters={"script": code}))).job
    runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
    return drive(runtime, job.id)


@pytest.mark.parametrize(
    ("manifest", "reason"),
    [
        pytest.param(
            "None", "outputs/script_manifest.json was not found on the backend or in blob storage", id="missing"
        ),
        pytest.param(
            '{"files": [{"name": "result.txt", "size": 5, "sha256": sha}]}',
            "outputs/result.txt is 4 bytes in blob storage; the manifest says 5",
            id="size-mismatch",
        ),
        pytest.param(
            '{"files": [{"name": "result.txt", "size": 4, "sha256": hashlib.sha256(b"else").hexdigest()}]}',
            "outputs/result.txt does not match the sha256 in the manifest",
            id="hash-mismatch",
        ),
        pytest.param(
            '{"files": [{"name": "ghost.txt", "size": 4, "sha256": sha}]}',
            "outputs/ghost.txt is listed in the manifest but is not in blob storage",
            id="listed-not-stored",
        ),
        pytest.param(
            '{"files": [{"name": "result.txt"}]}',
            "outputs/script_manifest.json is not a valid manifest: each file needs a name, a size and a sha256",
            id="entry-without-size",
        ),
        pytest.param('{"files": 3}', "outputs/script_manifest.json is not a valid manifest", id="files-not-a-list"),
        pytest.param('"{not json"', "outputs/script_manifest.json is not a valid manifest", id="not-json"),
    ],
)
def test_outputs_that_do_not_match_fail_the_job_with_one_readable_reason(
    make_runtime: RuntimeFactory, manifest: str, reason: str
) -> None:
    runtime = make_runtime()
    finished = run(runtime, script(manifest))
    assert finished.state is JobState.FAILED
    assert finished.reason == reason
    last = finished.history[-1]
    assert (last.state, last.source, last.message) == (
        JobState.FAILED,
        "postprocess",
        f"post-processing failed: {reason}",
    )
    assert finished.outputs == []
    # What the workload uploaded is kept for inspection: a failed check deletes nothing.
    outputs = runtime.blobs.get_container_client(runtime.settings.storage.outputs_container)
    assert outputs.get_blob_client(f"jobs/{finished.id}/outputs/result.txt").download_blob().readall() == b"done"


def test_a_valid_manifest_still_succeeds(make_runtime: RuntimeFactory) -> None:
    """The same template with a true manifest: the failures above come from the manifest alone."""
    finished = run(make_runtime(), script('{"files": [{"name": "result.txt", "size": 4, "sha256": sha}]}'))
    assert finished.state is JobState.SUCCEEDED, finished.reason
    assert {o.name for o in finished.outputs} == {"outputs/script_manifest.json", "outputs/result.txt"}
