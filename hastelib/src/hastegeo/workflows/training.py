"""Alias of ``python -m hastegeo.workloads.training`` for provider jobs submitted before workload folders."""

from __future__ import annotations

from hastegeo.workloads.training.run import main

if __name__ == "__main__":
    raise SystemExit(main())
