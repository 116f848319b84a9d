"""Alias of ``python -m hastegeo.workloads.embedding`` for provider jobs submitted before workload folders."""

from __future__ import annotations

from hastegeo.workloads.embedding.run import main

if __name__ == "__main__":
    raise SystemExit(main())
