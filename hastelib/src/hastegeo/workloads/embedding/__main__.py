"""``python -m hastegeo.workloads.embedding``: the embedding workload, on compute."""

from __future__ import annotations

from hastegeo.workloads.embedding.run import main

if __name__ == "__main__":
    raise SystemExit(main())
