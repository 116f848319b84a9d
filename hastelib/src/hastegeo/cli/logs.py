"""``haste logs JOB --stdout|--stderr [--follow]``: a job's output, part by part, from ``GET /api/jobs/{id}/logs``.

Each read starts where the last one ended (``nextOffset``), so nothing is printed twice
and nothing is skipped, whichever copy of the log answers (docs/adr/0045). Without
``--follow`` it prints what there is now; with it, it keeps reading until the API says the
job ended and its log was read to the end, and exits as ``haste watch`` does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from hastegeo.cli.client import ApiClient


def read_logs(
    client: ApiClient,
    job_id: str,
    stream: str,
    on_part: Callable[[dict[str, Any]], None],
    *,
    follow: bool,
    interval: float = 0.5,
) -> dict[str, Any]:
    """Read ``stream`` of the job from its start, calling ``on_part`` for each part with text; the last part read.

    Without ``follow`` it stops once a read brings nothing new; with it, once a part says ``ended``.
    """
    offset = 0
    while True:
        part = client.logs(job_id, stream, offset)
        if part.get("text"):
            on_part(part)
        progressed = part["nextOffset"] > offset
        offset = part["nextOffset"]
        if part.get("ended") or (not follow and not progressed):
            return part
        if not progressed:
            time.sleep(interval)
