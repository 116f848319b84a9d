"""Azure ML's own run events, read for the jobs they say have ended. Pure: no SDK import, no I/O.

A deployment that subscribes the workspace's Event Grid system topic to the
provider-events queue (``infra/modules/amlEvents.bicep``) gets one message per
event: ``Microsoft.MachineLearningServices.RunStatusChanged`` and
``…RunCompleted``, in the Event Grid schema (or CloudEvents 1.0, should the
subscription ask for it), JSON text or its Base64 (as Event Grid writes to a
storage queue). The job's own tags travel in ``data.runTags``; ours carry the
job id (``haste_job_id``, :mod:`.entities`), so no lookup maps a run to a job.

An event only nudges: the poll step it triggers asks Azure ML for the job's
status as always, so a late, repeated, forged or missing event changes nothing
but how soon the end is seen. Azure ML documents that some failed or cancelled
runs raise no event; those are found by the job's poll chain, as before.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from hastegeo.compute.azure_ml.status import TERMINAL_STATUSES
from hastegeo.models.ids import is_id

TAG_JOB_ID = "haste_job_id"  # the tag :mod:`.entities` puts on every job it submits
RUN_STATUS_CHANGED = "Microsoft.MachineLearningServices.RunStatusChanged"
RUN_COMPLETED = "Microsoft.MachineLearningServices.RunCompleted"
MAX_EVENTS = 100  # per message: Event Grid writes one per message; a batch larger than this is not ours


def ended_jobs(body: bytes | str) -> list[str]:
    """Our job ids of the runs that ``body``'s events say ended, in order, each once ([] for anything else)."""
    found: list[str] = []
    for event in _events(body):
        job_id = _ended_job(event)
        if job_id is not None and job_id not in found:
            found.append(job_id)
    return found


def _events(body: bytes | str) -> list[dict[str, Any]]:
    text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
    parsed = _json(text)
    if parsed is None:
        try:
            parsed = _json(base64.b64decode(text.strip(), validate=True).decode("utf-8", errors="replace"))
        except (binascii.Error, ValueError):
            return []
    events = parsed if isinstance(parsed, list) else [parsed]
    return [event for event in events[:MAX_EVENTS] if isinstance(event, dict)]


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _ended_job(event: dict[str, Any]) -> str | None:
    kind = event.get("eventType") or event.get("type")  # Event Grid schema, or CloudEvents
    data = event.get("data")
    if not isinstance(data, dict):
        return None
    if kind == RUN_STATUS_CHANGED:
        if data.get("runStatus") not in TERMINAL_STATUSES:
            return None
    elif kind != RUN_COMPLETED:
        return None
    tags = data.get("runTags")
    job_id = tags.get(TAG_JOB_ID) if isinstance(tags, dict) else None
    return job_id if isinstance(job_id, str) and is_id(job_id) else None


def run_status_event(
    run_id: str, status: str, tags: dict[str, str], *, experiment: str, workspace_id: str
) -> dict[str, Any]:
    """The event Azure ML raises when run ``run_id`` moves to ``status``, in the Event Grid schema.

    The shape of Azure ML's documented example, for stand-ins and tests; the app only reads events.
    """
    return {
        "topic": workspace_id,
        "subject": f"experiments/{experiment}/runs/{run_id}",
        "eventType": RUN_STATUS_CHANGED,
        "id": f"{run_id}-{status}",
        "data": {
            "runStatus": status,
            "experimentId": experiment,
            "experimentName": experiment,
            "runId": run_id,
            "runType": "azureml.CommandJob",
            "runTags": dict(tags),
            "runProperties": {},
        },
        "dataVersion": "2",
        "metadataVersion": "1",
    }
