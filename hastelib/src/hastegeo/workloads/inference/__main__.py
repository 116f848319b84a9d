"""``python -m hastegeo.workloads.inference``: the inference workload, on compute."""

from __future__ import annotations

from hastegeo.workloads.inference.run import main

if __name__ == "__main__":
    raise SystemExit(main())
