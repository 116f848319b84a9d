"""Where tracing's CPU goes: the development host sampled through the same jobs untraced and traced.

``python -m tests.bench.trace_profile [--jobs N]`` starts the stack twice, telemetry off
then ``file:`` (every span exported), each time unprofiled. After a warm-up, N trivial
jobs run while ``py-spy`` samples the development host and its queue workers from the
outside (``--subprocesses``; workloads, which cost the same traced or not, are left
out: only the processes there before the burst count). Only samples of the thread that holds the interpreter lock
count (``--gil``: py-spy's guess of which threads are idle counts threads blocked in a
lock or a socket as running), so a function's samples per job are its share of the
Python CPU; the host pays nothing for being watched but the pauses of each sample. The
two sides are compared function by function (own and inclusive samples per job), then
by component.

An earlier version ran a ``cProfile`` in every host thread and wrote the merged profiles
every second: on a busy two-core machine the writes held the interpreter lock long
enough that the queue workers (at nice 10) did not finish importing the app, so it never
completed a run. Sampling from another process keeps the host as ``make bench`` runs it.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import psutil
from azure.storage.blob import BlobServiceClient

from hastegeo.cli.client import ApiClient
from hastegeo_dev.stack import LocalStack
from tests.bench import thread_profile
from tests.bench.pipeline_bench import _wait_all, bench_stack, patiently
from tests.bench.process_cpu import host_worker

RATE = 250  # samples a second per thread that runs


@dataclass
class Samples:
    """Samples of the host's processes over a burst: by leaf frame (own), by frame anywhere in the stack (inclusive)."""

    jobs: int
    own: Counter[str] = field(default_factory=Counter)
    inclusive: Counter[str] = field(default_factory=Counter)
    total: int = 0

    def ms_per_job(self, samples: float) -> float:
        return samples / RATE / self.jobs * 1000


_PROCESS = re.compile(r"(?:^|;)process (\d+):")


def parse_raw(text: str, jobs: int, pids: set[int]) -> Samples:
    """Collapsed stacks (``frame;frame;... count``, root first) of the processes ``pids`` only (pure).

    With ``--subprocesses``, py-spy roots each stack in ``process PID:"COMMAND"`` frames, the
    parent's before the child's (host; queue worker; workload); the last one is the process the
    stack was sampled in. A command line may hold line breaks, so such a stack spans lines.
    """
    found = Samples(jobs)
    pid: int | None = None
    for line in text.splitlines():
        rest = line
        processes = list(_PROCESS.finditer(line))
        if processes:
            pid, rest = int(processes[-1].group(1)), line[processes[-1].end() :]
        stack, _, count = rest.rpartition(" ")
        if not stack.endswith(")") or not count.isdigit():
            continue
        if pid is not None:
            if pid not in pids or '";' not in stack:
                continue
            stack = stack.split('";', 1)[1]  # the frames after the process's command line
        frames = [frame for frame in stack.split(";") if not frame.startswith("thread ")]
        samples = int(count)
        found.total += samples
        found.own[frames[-1]] += samples
        for frame in set(frames):
            found.inclusive[frame] += samples
    return found


def sample_burst(jobs: int, workdir: Path, export: str, py_spy: str) -> Samples:
    """Samples of the host's running threads over ``jobs`` jobs on a warm stack exporting to ``export``."""
    settings = bench_stack(8, HASTE_OTEL_EXPORT=export)
    with LocalStack(workdir, settings=settings) as stack:
        blobs = BlobServiceClient.from_connection_string(stack.azurite.connection_string)
        blobs.get_container_client("haste-inputs").upload_blob("bench/input.txt", b"x" * 1024, overwrite=True)
        client = ApiClient(stack.base_url, timeout=60)
        request = {"workload": "artifacts", "projectId": "bench", "inputs": [{"blob": "bench/input.txt"}]}

        def burst(prefix: str, count: int) -> None:
            with ThreadPoolExecutor(max_workers=8) as pool:
                ids = list(
                    pool.map(
                        lambda i: patiently(lambda: client.submit(request, idempotency_key=f"{prefix}{i}"))["id"],
                        range(count),
                    )
                )
            _wait_all(client, ids, 900)

        burst("warm-", 10)
        assert stack.host is not None
        assert stack.host.process is not None
        raw = workdir / "samples.txt"
        command = [py_spy, "record", "--pid", str(stack.host.process.pid), "--subprocesses", "--function"]
        command += [
            "--full-filenames",
            "--gil",
            "--nonblocking",
            "--rate",
            str(RATE),
            "--format",
            "raw",
            "--output",
            str(raw),
        ]
        host = psutil.Process(stack.host.process.pid)
        pids = {host.pid} | {child.pid for child in host.children(recursive=True) if host_worker(child)}
        recorder = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            time.sleep(1.0)  # py-spy attaches to each process before it samples
            burst("job-", jobs)
        finally:
            recorder.send_signal(signal.SIGINT)  # py-spy writes its output when interrupted
            _, errors = recorder.communicate(timeout=120)
        if not raw.exists():
            raise RuntimeError(f"py-spy wrote no samples: {errors.decode(errors='replace')[-2000:]}")
        return parse_raw(raw.read_text(encoding="utf-8"), jobs, pids)


def label(frame: str) -> str:
    """``function (path:line)`` with the path from its package on."""
    name, _, where = frame.partition(" (")
    for marker in ("site-packages/", "/src/", "python3.11/"):
        if marker in where:
            where = where.split(marker)[-1]
            break
    return f"{name} ({where}" if where else name


def where(frame: str) -> str:
    return frame.partition(" (")[2] or frame


def report(off: Samples, on: Samples, top: int) -> list[str]:
    """The comparison as lines (pure)."""
    lines = [
        f"host CPU per job sampled by py-spy at {RATE}/s, {on.jobs} trivial jobs: "
        f"untraced {off.ms_per_job(off.total):.1f} ms, traced {on.ms_per_job(on.total):.1f} ms",
        "",
        f"the {top} functions whose own CPU tracing adds most (ms per job: untraced, traced, added)",
    ]
    own_added = Counter({frame: on.own[frame] - off.own.get(frame, 0) for frame in on.own})
    for frame, _ in own_added.most_common(top):
        lines.append(
            f"  {off.ms_per_job(off.own[frame]):7.2f} {on.ms_per_job(on.own[frame]):7.2f} "
            f"{on.ms_per_job(own_added[frame]):+7.2f}  {label(frame)}"
        )
    lines += ["", f"the {top} functions whose inclusive CPU tracing adds most (ms per job: untraced, traced, added)"]
    incl_added = Counter({frame: on.inclusive[frame] - off.inclusive.get(frame, 0) for frame in on.inclusive})
    for frame, _ in incl_added.most_common(top):
        lines.append(
            f"  {off.ms_per_job(off.inclusive[frame]):7.2f} {on.ms_per_job(on.inclusive[frame]):7.2f} "
            f"{on.ms_per_job(incl_added[frame]):+7.2f}  {label(frame)}"
        )
    components: dict[str, Counter[str]] = {"off": Counter(), "on": Counter()}
    for side, samples in (("off", off), ("on", on)):
        for frame, count in samples.own.items():
            components[side][thread_profile.component(where(frame))] += count
    lines += ["", "own CPU by component (ms per job): untraced, traced"]
    for name in sorted(set(components["on"]) | set(components["off"]), key=lambda n: -components["on"][n]):
        lines.append(
            f"  {name:<44} {off.ms_per_job(components['off'][name]):8.2f} {on.ms_per_job(components['on'][name]):8.2f}"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=40)
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    py_spy = shutil.which("py-spy", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))
    if py_spy is None:
        print("py-spy is not installed: pip install -r requirements-dev.txt", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="haste-trace-profile-") as tmp:
        off = sample_burst(args.jobs, Path(tmp) / "off", "off", py_spy)
        on = sample_burst(args.jobs, Path(tmp) / "on", f"file:{tmp}/otel.jsonl", py_spy)
    print("\n".join(report(off, on, args.top)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
