"""How the CLI prints a job and its events; shared by the client commands and the demo.

A module of its own so that ``main`` (the commands) and ``demo`` (which ``main``
runs) import it instead of each other.
"""

from __future__ import annotations

from typing import Any


def print_event(event: dict[str, Any]) -> None:
    at = str(event.get("at", ""))[11:19]
    print(f"  {at}  {event.get('state', ''):<16} {event.get('source', ''):<12} {event.get('message', '')}", flush=True)


def print_job(job: dict[str, Any]) -> None:
    print(f"job {job['id']}  {job['workload']}  on {job['backend']}  state: {job['state']}")
    if job.get("reason"):
        print(f"  reason: {job['reason']}")
    for output in job.get("outputs", []):
        print(f"  output: {output['blob']}  ({output['size']} bytes)")
