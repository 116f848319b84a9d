"""``python -m hastegeo.workloads.training``: the training workload, on compute."""

from __future__ import annotations

from hastegeo.workloads.training.run import main

if __name__ == "__main__":
    raise SystemExit(main())
