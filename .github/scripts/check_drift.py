"""Drift check between the code's settings, infra's app settings and the deploy workflow (docs/adr/0005, 0010).

The check is the package ``settings_drift`` next to this file, one module per job;
this script only puts it on the path and runs it::

    python .github/scripts/check_drift.py              # check, exit 1 on drift
    python .github/scripts/check_drift.py --markdown   # print the settings table
    python .github/scripts/check_drift.py --write-docs # refresh docs/deploy.md's table
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from settings_drift.cli import main

if __name__ == "__main__":
    sys.exit(main())
