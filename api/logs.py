"""``GET /api/jobs/{id}/logs``: the next part of a job's stdout or stderr, from a byte offset (docs/adr/0045).

Access is the job's own (``GET /api/jobs/{id}``): another project's job answers exactly like a
missing one. ``stream`` (stdout or stderr, default stdout) and ``offset`` (a byte offset, default 0)
are checked before anything is read; a bad value is a 400 naming it.
"""

from __future__ import annotations

import azure.functions as func

from api.access import Denied, caller, job_not_found, require
from api.problems import json_response, problem
from api.query import whole_number
from hastegeo.auth import job_access
from hastegeo.compute.logtext import STREAMS
from hastegeo.models.ids import is_id
from hastegeo.pipeline.logs import JobLogs
from hastegeo.runtime import get_runtime
from hastegeo.utils.errors import JobNotFoundError

ROUTE = "jobs/{id}/logs"
MAX_OFFSET = 2**53 - 1  # what every JSON reader holds exactly


def job_logs(req: func.HttpRequest) -> func.HttpResponse:
    runtime = get_runtime()
    job_id = req.route_params.get("id", "")
    stream = req.params.get("stream", "stdout")
    offset = whole_number(req.params.get("offset", "0"), MAX_OFFSET)
    try:
        principal = caller(req, runtime.settings.auth, ROUTE)
        if not is_id(job_id):
            return job_not_found(job_id)
        if stream not in STREAMS:
            return problem(400, "Invalid stream", errors=[("stream", f"one of {', '.join(STREAMS)}")])
        if offset is None:
            return problem(
                400, "Invalid offset", errors=[("offset", f"a byte offset: an integer from 0 to {MAX_OFFSET}")]
            )
        job = runtime.api.store.get(job_id)
        require(job_access(principal, job.project_id, "read"), principal, req, ROUTE, job.project_id, job_id=job_id)
    except Denied as denied:
        return denied.response
    except JobNotFoundError:
        return job_not_found(job_id)
    deps = runtime.api.deps
    page = JobLogs(deps.service, runtime.api.blobs, deps.output_location).read(job, stream, offset)
    return json_response(page.view())
