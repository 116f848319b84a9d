"""``python -m hastegeo_dev``: ``haste`` with the development commands (``make dev``, ``make demo``).

They are registered here directly, so this works even where the ``hastegeo.cli`` entry
point of an older install of hastegeo-dev is missing.
"""

from __future__ import annotations

import sys

from hastegeo.cli.main import main
from hastegeo_dev.cli import register

if __name__ == "__main__":
    sys.exit(main(plugins=[register]))
