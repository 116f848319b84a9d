"""Alias of ``python -m hastegeo.workloads.artifacts`` for provider jobs submitted before workload folders."""

from __future__ import annotations

from hastegeo.workloads.artifacts.run import main

if __name__ == "__main__":
    raise SystemExit(main())
