"""Where tracing's CPU goes: the development host profiled through the same jobs untraced and traced.

``python -m tests.bench.trace_profile [--jobs N]`` starts the stack twice, telemetry off
then ``file:`` (every span exported), each host process under a per-thread CPU-time
profiler (:mod:`tests.bench.thread_profile`, loaded by ``profiling_site`` into the
host's processes only). After a warm-up, N trivial jobs run; the profiles' growth over
them, per job, is compared function by function: the functions whose own CPU time
tracing adds the most come first, then the totals by component. The profiler itself
slows every call, so read the figures as shares, not as what a job costs without it
(``make bench`` measures that, unprofiled).
"""

from __future__ import annotations

import argparse
import os
import pstats
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from azure.storage.blob import BlobServiceClient

from hastegeo.cli.client import ApiClient
from hastegeo_dev.stack import LocalStack
from tests.bench import thread_profile
from tests.bench.pipeline_bench import _wait_all, bench_stack, patiently

BENCH = Path(__file__).parent
Key = tuple[str, int, str]


def own_time(folder: Path) -> Counter[Key]:
    """Own CPU seconds per function so far, over every profiled process of the stack."""
    found: Counter[Key] = Counter()
    for path in folder.glob("*.prof"):
        raw: dict[Any, Any] = pstats.Stats(str(path)).stats  # type: ignore[attr-defined]
        for key, (_cc, _nc, tottime, _ct, _callers) in raw.items():
            found[key] += tottime
    return found


def profile_jobs(jobs: int, workdir: Path, export: str) -> Counter[Key]:
    """Own CPU seconds per function per job, over ``jobs`` jobs on a warm stack exporting to ``export``."""
    profiles = workdir / "profiles"
    site = os.pathsep.join(
        filter(None, [str(BENCH / "profiling_site"), str(BENCH.parents[1]), os.environ.get("PYTHONPATH")])
    )
    settings = bench_stack(8, HASTE_OTEL_EXPORT=export, PYTHONPATH=site, HASTE_BENCH_PROFILE_DIR=str(profiles))
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
            _wait_all(client, ids, 600)

        burst("warm-", 10)
        time.sleep(2)  # a profile snapshot after the warm-up's last step
        before = own_time(profiles)
        burst("job-", jobs)
        time.sleep(2)
        after = own_time(profiles)
    return Counter({key: (after[key] - before.get(key, 0.0)) / jobs for key in after})


def label(key: Key) -> str:
    filename, line, name = key
    where = filename.split("site-packages/")[-1].split("/src/")[-1]
    return f"{where}:{line}({name})" if filename != "~" else name


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=40)
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="haste-trace-profile-") as tmp:
        off = profile_jobs(args.jobs, Path(tmp) / "off", "off")
        on = profile_jobs(args.jobs, Path(tmp) / "on", f"file:{tmp}/otel.jsonl")
    print(f"\nhost CPU per job under the profiler, {args.jobs} trivial jobs: untraced beside traced (file export)")
    print(f"  untraced {sum(off.values()) * 1000:.1f} ms, traced {sum(on.values()) * 1000:.1f} ms")
    added = Counter({key: on[key] - off.get(key, 0.0) for key in on})
    print(f"\nthe {args.top} functions tracing adds most own CPU to (ms per job: traced − untraced)")
    for key, seconds in added.most_common(args.top):
        print(f"  {seconds * 1000:7.3f}  {label(key)}")
    components: dict[str, Counter[str]] = {"off": Counter(), "on": Counter()}
    for side, stats in (("off", off), ("on", on)):
        for key, seconds in stats.items():
            components[side][thread_profile.component(key[0] if key[0] != "~" else key[2])] += seconds
    print("\nby component (ms per job): untraced, traced")
    for name in sorted(set(components["on"]) | set(components["off"]), key=lambda n: -components["on"][n]):
        print(f"  {name:<44} {components['off'][name] * 1000:8.2f} {components['on'][name] * 1000:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
