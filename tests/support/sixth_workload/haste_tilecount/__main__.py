"""``python -m <this package>``: the tilecount workload, on compute."""

from __future__ import annotations

from .run import main

if __name__ == "__main__":
    raise SystemExit(main())
