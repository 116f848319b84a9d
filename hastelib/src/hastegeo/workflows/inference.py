"""Alias of ``python -m hastegeo.workloads.inference`` for provider jobs submitted before workload folders."""

from __future__ import annotations

from hastegeo.workloads.inference.run import main

if __name__ == "__main__":
    raise SystemExit(main())
