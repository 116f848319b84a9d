"""The job logs route of the OpenAPI document (docs/adr/0045), beside the job routes of :mod:`api.openapi`."""

from __future__ import annotations

from typing import Any

from api.logs import MAX_OFFSET
from hastegeo.compute.logtext import STREAMS, WINDOW_BYTES
from hastegeo.models.ids import ID_PATTERN
from hastegeo.models.states import JobState

_REF = "#/components/schemas/"
_PROBLEM = {"application/problem+json": {"schema": {"$ref": _REF + "Problem"}}}


def log_schemas() -> dict[str, Any]:
    """``JobLogPart``: what one read of a stream answers."""
    offset = {"type": "integer", "minimum": 0, "maximum": MAX_OFFSET}
    return {
        "JobLogPart": {
            "type": "object",
            "required": ["jobId", "stream", "offset", "nextOffset", "text", "ended", "source", "state"],
            "additionalProperties": False,
            "properties": {
                "jobId": {"type": "string", "pattern": ID_PATTERN},
                "stream": {"type": "string", "enum": list(STREAMS)},
                "offset": {**offset, "description": "The position this part starts at (the one asked for)"},
                "nextOffset": {
                    **offset,
                    "description": "Ask from here next; equal to offset when nothing is new, and never smaller. A "
                    "position, not a byte count: past the first run it also names the run (a requeued or retried "
                    "task, a job moved to another backend), whose output starts after a separator line",
                },
                "text": {
                    "type": "string",
                    "description": "The log from offset to nextOffset as UTF-8 text, whole lines only until the job "
                    "ended (a line over the window goes out in parts cut clear of credentials), credentials redacted "
                    "as in the history",
                },
                "ended": {
                    "type": "boolean",
                    "description": "The job has ended and this part reached the end of its log: stop following",
                },
                "source": {
                    "type": "string",
                    "enum": ["backend", "blob", "none"],
                    "description": "Who answered: the backend's own copy (the local file, the Batch node, Azure "
                    "ML's job log), the blob copy under the job's output prefix, or nobody has the log yet",
                },
                "state": {"type": "string", "enum": [state.value for state in JobState]},
            },
        }
    }


def log_paths(
    job_id: dict[str, Any], principal: dict[str, Any], auth: dict[str, Any], unavailable: dict[str, Any]
) -> dict[str, Any]:
    """``GET /jobs/{id}/logs``."""
    return {
        "/jobs/{id}/logs": {
            "get": {
                "operationId": "getJobLogs",
                "description": (
                    f"The next part (at most {WINDOW_BYTES // 1024} KiB) of the job's stdout or stderr from a "
                    "position, while it runs and after it ended. Follow it by asking again from nextOffset until "
                    "ended is true. Access is the job's own: a job of another project answers 404."
                ),
                "parameters": [
                    job_id,
                    {
                        "name": "stream",
                        "in": "query",
                        "required": False,
                        "description": "Which stream (default stdout)",
                        "schema": {"type": "string", "enum": list(STREAMS)},
                    },
                    {
                        "name": "offset",
                        "in": "query",
                        "required": False,
                        "description": "The position to read from (default 0, the start): a nextOffset an earlier read "
                        "gave",
                        "schema": {"type": "string", "pattern": "^[0-9]{1,16}$"},
                    },
                    principal,
                ],
                "responses": {
                    "200": {
                        "description": "The next part of the stream",
                        "content": {"application/json": {"schema": {"$ref": _REF + "JobLogPart"}}},
                    },
                    "400": {"description": "A bad stream or offset; errors name the parameter", "content": _PROBLEM},
                    "401": auth["401"],
                    "404": {
                        "description": "No such job, or a job of a project the caller does not belong to",
                        "content": _PROBLEM,
                    },
                    **unavailable,
                },
            }
        }
    }
