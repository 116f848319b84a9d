"""What tracing adds to a job's steps, measured where it is spent (``python -m tests.bench.trace_steps``).

The pipeline bench's host CPU per job moves by ±30 % from round to round on a two-core
machine (queue polling, threads contending, the burst's shape), far more than the 5 %
budget it judges (ADR 0012). Here one process runs the same jobs' steps (accept, submit,
and each poll delivery until the job has ended) one after the other, the way the host
drives them, and counts only the CPU the steps' own thread spends in them (``time.thread_time``),
plus what exporting the spans cost (the exporter's own account in the file): waiting,
receiving, the workload and the local backend's threads are the same traced or not and
are left out. Each round runs a child process untraced and one traced (``file:``, every
span exported), which goes first alternating; the figure is the median of the per-round
ratios with its spread. The HTTP request's own span (``api/tracing.py``) is not in it:
the API's accept is called directly, as :mod:`tests.bench.job_calls` does.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import ParamSpec, TypeVar

from tests.support.runtime import development_runtime

P = ParamSpec("P")
T = TypeVar("T")
WARM_JOBS = 3
CONNECTION = "HASTE_TRACE_STEPS_STORAGE"  # the child's storage, passed in its environment, not its argv


def child(export: str, connection_string: str, root: Path, jobs: int) -> dict[str, float]:
    """Run ``jobs`` artifacts jobs' steps in this process with telemetry ``export``; their CPU per job."""
    from hastegeo.pipeline.accept import parse_request
    from hastegeo.settings.load import load_settings
    from hastegeo.store.queues import POLL_QUEUE, SUBMIT_QUEUE
    from hastegeo.telemetry.configure import configure_telemetry, flush_telemetry
    from hastegeo.telemetry.export import export_cost
    from tests.bench.job_calls import deliver

    configure_telemetry(export)
    settings = load_settings(
        {
            "AzureWebJobsStorage": connection_string,
            "HASTE_LOCAL_ROOT": str(root / "local"),
            "HASTE_POLL_INITIAL_S": "1",
            "HASTE_OTEL_EXPORT": export,
        }
    )
    runtime = development_runtime(settings, inline_exits=False)
    runtime.blobs.get_container_client(settings.storage.inputs_container).upload_blob(
        "trace/input.txt", b"x" * 512, overwrite=True
    )
    request = parse_request({"workload": "artifacts", "projectId": "trace", "inputs": [{"blob": "trace/input.txt"}]})
    spent = 0.0

    def timed(step: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        nonlocal spent
        started = time.thread_time()
        try:
            return step(*args, **kwargs)
        finally:
            spent += time.thread_time() - started

    measured = 0.0
    for index in range(WARM_JOBS + jobs):
        spent = 0.0
        job = timed(runtime.acceptor.accept, request, idempotency_key=f"trace-{time.time_ns()}").job
        deliver(runtime, SUBMIT_QUEUE, lambda message: timed(runtime.submit.handle, message), 10, Counter())
        deadline = time.monotonic() + 60
        while not runtime.store.get(job.id).state.terminal:
            deliver(runtime, POLL_QUEUE, lambda message: timed(runtime.poll.handle, message), 0.5, Counter())
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {job.id} did not end")
        if index >= WARM_JOBS:
            measured += spent
    for adapter in runtime.registry.built().values():
        adapter.close()
    export_ms = 0.0
    if export.startswith("file:"):
        from hastegeo.telemetry.tracer import INTERNAL, step_span

        flush_telemetry()  # the jobs' last spans
        with step_span("reconcile", traceparent=None, kind=INTERNAL):  # a span the pipeline's sampler keeps
            pass
        flush_telemetry()  # a batch of one span, which reports what every batch before it cost
        _, cpu_s = export_cost(Path(export.removeprefix("file:")))
        export_ms = cpu_s * 1000 * jobs / (WARM_JOBS + jobs)  # the warm-up jobs' share left out
    return {"steps_ms": measured / jobs * 1000, "export_ms": export_ms / jobs}


def run_child(export: str, connection_string: str, jobs: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="haste-trace-") as tmp:
        target = export.replace("{tmp}", tmp)
        out = subprocess.run(
            [sys.executable, "-m", "tests.bench.trace_steps", "--child", target, tmp, str(jobs)],
            capture_output=True,
            text=True,
            env={**os.environ, CONNECTION: connection_string},
        )
    if out.returncode:
        raise RuntimeError(f"the {export} child failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=20, help="measured jobs per child, after a warm-up of three")
    parser.add_argument("--child", nargs=3, metavar=("EXPORT", "ROOT", "JOBS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        export, root, jobs = args.child
        print(json.dumps(child(export, os.environ[CONNECTION], Path(root), int(jobs))))
        return 0
    from hastegeo_dev.devhost.azurite import Azurite

    sides = {"untraced": "off", "traced": "file:{tmp}/otel.jsonl"}
    runs: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
    with Azurite(in_memory=True) as azurite:
        for round_ in range(args.rounds):
            order = list(sides.items())
            for side, export in order[::-1] if round_ % 2 else order:
                runs[side].append(run_child(export, azurite.connection_string, args.jobs))
                print(f"  round {round_ + 1}: {side:<9} {runs[side][-1]['steps_ms']:.1f} ms a job", flush=True)
    untraced = [run["steps_ms"] for run in runs["untraced"]]
    traced = [run["steps_ms"] + run["export_ms"] for run in runs["traced"]]
    ratios = [on / off for on, off in zip(traced, untraced, strict=True)]
    print(
        f"CPU of a job's steps in their own thread, {args.jobs} jobs a child, {args.rounds} rounds, which side goes "
        "first alternating; the traced side includes exporting its spans"
    )
    for side, values in (("untraced", untraced), ("traced", traced)):
        low, high = min(values), max(values)
        print(f"  {side:<9} median {statistics.median(values):.1f} ms a job (min {low:.1f}, max {high:.1f})")
    export = [run["export_ms"] for run in runs["traced"]]
    print(f"  of which exporting the spans: median {statistics.median(export):.2f} ms a job")
    print(
        f"  traced / untraced: median of the per-round ratios {statistics.median(ratios):.3f} "
        f"({min(ratios):.3f}–{max(ratios):.3f}); tracing adds {(statistics.median(ratios) - 1) * 100:.1f} % "
        "(budget 5 %)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
