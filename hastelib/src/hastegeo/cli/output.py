"""How the CLI prints: tables for people, the API's JSON for scripts; shared by the commands and the demo.

``--output json`` prints exactly what the API answered: one document for one object
(a job, the backends), and JSON lines for lists (one job summary, history event or
output record per line), so a list streams page by page and ``jq`` reads it as it comes.
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

TABLE, JSON = "table", "json"


def default_output(stream: TextIO | None = None) -> str:
    """Tables on a terminal, JSON when piped or redirected (``$HASTE_OUTPUT`` or ``--output`` decide otherwise)."""
    stream = stream or sys.stdout
    return TABLE if stream.isatty() else JSON


def print_json(value: Any, *, line: bool = False) -> None:
    """One JSON document (indented) or one JSON line."""
    print(json.dumps(value) if line else json.dumps(value, indent=2), flush=True)


def event_line(event: dict[str, Any]) -> str:
    at = str(event.get("at", ""))[11:19]
    return f"  {at}  {event.get('state', ''):<16} {event.get('source', ''):<12} {event.get('message', '')}"


def print_event(event: dict[str, Any]) -> None:
    print(event_line(event), flush=True)


def print_job(job: dict[str, Any]) -> None:
    print(f"job {job['id']}  {job['workload']}  on {job['backend']}  state: {job['state']}")
    if job.get("reason"):
        print(f"  reason: {job['reason']}")
    for output in job.get("outputs", []):
        print(f"  output: {output['blob']}  ({output['size']} bytes)")


def job_row(job: dict[str, Any]) -> str:
    return f"{job['id']}  {job['workload']:<10} {job['backend']:<12} {job['state']:<16} {job['createdAt']}"


def output_row(output: dict[str, Any]) -> str:
    return f"{output['size']:>12}  {str(output.get('sha256') or '-')[:12]:<12}  {output['name']}"


def _duration(seconds: int) -> str:
    """``14400`` → ``4h``, ``600`` → ``10min``, ``90`` → ``90s``."""
    for unit, size in (("h", 3600), ("min", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def profile_row(profile: dict[str, Any]) -> str:
    """``  profile gpu-t4-spot (spot, at most 4h) on pool gpu-t4-spot: training``."""
    limit = int(profile.get("maxRunS") or 0)
    longest = f", at most {_duration(limit)}" if limit else ""
    workloads = ", ".join(profile.get("workloads") or []) or "-"
    return f"  profile {profile['name']} ({profile['tier']}{longest}) on {profile['runsOn']}: {workloads}"


def backend_rows(body: dict[str, Any]) -> list[str]:
    rows = [f"default: {body.get('default')}"]
    for backend in body.get("backends", []):
        rows.append(f"{backend['name']:<14} weight {backend['weight']:<4} {', '.join(backend['workloads']) or '-'}")
        rows += [f"  not {workload}: {why}" for workload, why in backend.get("unavailable", {}).items()]
        rows += [profile_row(profile) for profile in backend.get("profiles", []) if profile["name"] != "default"]
    rows += [f"{backend['name']:<14} disabled: {backend['reason']}" for backend in body.get("disabled", [])]
    return rows
