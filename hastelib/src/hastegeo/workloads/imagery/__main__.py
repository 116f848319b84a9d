"""``python -m hastegeo.workloads.imagery``: the imagery workload, on compute."""

from __future__ import annotations

from hastegeo.workloads.imagery.run import main

if __name__ == "__main__":
    raise SystemExit(main())
