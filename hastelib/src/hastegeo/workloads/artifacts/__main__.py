"""``python -m hastegeo.workloads.artifacts``: the artifacts workload, on compute."""

from __future__ import annotations

from hastegeo.workloads.artifacts.run import main

if __name__ == "__main__":
    raise SystemExit(main())
