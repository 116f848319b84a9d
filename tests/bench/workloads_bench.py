"""Per-workload runtime and peak memory on the sample scene and on a large scene.

    python -m tests.bench.workloads_bench                 # 512 and 4096 pixel scenes
    python -m tests.bench.workloads_bench --sizes 512 2048 --keep /tmp/bench

Each workload runs as its own process (``python -m hastegeo.workloads.<name>``,
as the local backend runs it), and its peak resident memory comes from
``os.wait4`` for that very child, so the numbers do not mix. The chain is
imagery (both tiles) -> training -> inference -> embedding. Memory should
stay flat across sizes: the last table column is the peak relative to the
smallest scene.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from hastegeo.workloads._run.sample_data import generate

WORKLOADS = ("imagery", "training", "inference", "embedding")


@dataclass(frozen=True)
class Measurement:
    workload: str
    size: int
    seconds: float
    peak_mb: float
    returncode: int
    stderr: str


def run_measured(workload: str, workdir: Path, size: int = 0) -> Measurement:
    """Run one workload in a child process; return its wall time and its own peak RSS."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HASTE_")}
    env["HASTE_JOB_WORKDIR"] = str(workdir)
    started = time.monotonic()
    with tempfile.TemporaryFile() as stderr:
        child = subprocess.Popen(
            [sys.executable, "-m", f"hastegeo.workloads.{workload}"], env=env, stdout=subprocess.DEVNULL, stderr=stderr
        )
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.monotonic() - started
        stderr.seek(0)
        text = stderr.read().decode(errors="replace")
    peak_mb = usage.ru_maxrss / 1024 if sys.platform != "darwin" else usage.ru_maxrss / 2**20
    return Measurement(workload, size, seconds, peak_mb, child.returncode, text)


def _job(root: Path, name: str, inputs: dict[str, Path], params: dict[str, object]) -> Path:
    workdir = root / name
    (workdir / "inputs").mkdir(parents=True)
    for target, source in inputs.items():
        try:
            os.link(source, workdir / "inputs" / target)  # large scenes: no copy when on the same disk
        except OSError:
            shutil.copy(source, workdir / "inputs" / target)
    (workdir / "params.json").write_text(json.dumps(params))
    return workdir


def bench_scene(root: Path, size: int) -> list[Measurement]:
    """Generate a scene of ``size`` pixels and run the whole chain on it."""
    scene = generate(root / "scene", size=size, seed=0)
    results = []
    imagery = _job(root, "imagery", {p.name: p for p in scene.rasters}, {})
    results.append(run_measured("imagery", imagery, size))
    cog = imagery / "outputs" / "imagery.tif"
    training = _job(
        root, "training", {"imagery.tif": cog, "labels.geojson": scene.labels}, {"classes": list(scene.classes)}
    )
    results.append(run_measured("training", training, size))
    model = training / "outputs" / "model.json"
    inference = _job(
        root, "inference", {"imagery.tif": cog, "model.json": model, "buildings.geojson": scene.buildings}, {}
    )
    results.append(run_measured("inference", inference, size))
    embedding = _job(root, "embedding", {"imagery.tif": cog, "buildings.geojson": scene.buildings}, {})
    results.append(run_measured("embedding", embedding, size))
    for measurement in results:
        if measurement.returncode != 0:
            raise SystemExit(f"{measurement.workload} failed on the {size}px scene:\n{measurement.stderr}")
    accuracy = json.loads((training / "outputs" / "metrics.json").read_text())["validationAccuracy"]
    print(f"# {size}x{size}: validation accuracy {accuracy:.3f}", flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[512, 4096], help="scene sizes in pixels")
    parser.add_argument("--keep", type=Path, help="keep the scenes and outputs under this folder")
    args = parser.parse_args(argv)
    root = args.keep or Path(tempfile.mkdtemp(prefix="haste-bench-"))
    try:
        measurements = [m for size in args.sizes for m in bench_scene(root / str(size), size)]
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    baseline = {m.workload: m.peak_mb for m in measurements if m.size == min(args.sizes)}
    print(f"{'workload':<10} {'size':>6} {'seconds':>8} {'peak MB':>8} {'vs smallest':>11}")
    for m in measurements:
        ratio = m.peak_mb / baseline[m.workload]
        print(f"{m.workload:<10} {m.size:>6} {m.seconds:>8.2f} {m.peak_mb:>8.1f} {ratio:>10.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
