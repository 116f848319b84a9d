"""Where the development tools find the checkout: the current folder or a parent, else the one they sit in.

``make dev``, ``make demo`` and the tests run from the repository root, but a tool started
from any other folder (a script, an IDE, ``cd /tmp && python -m hastegeo_dev demo``) still
finds the app, ``host.json`` and ``node_modules`` through its own location, because an
editable install of ``hastelib/dev`` keeps this file inside the checkout.
"""

from __future__ import annotations

from pathlib import Path

# This file is <checkout>/hastelib/dev/src/hastegeo_dev/checkout.py.
OWN_CHECKOUT = Path(__file__).resolve().parents[4]


def is_checkout(folder: Path) -> bool:
    """Whether ``folder`` holds the Functions app (``function_app.py`` and ``host.json``)."""
    return (folder / "function_app.py").is_file() and (folder / "host.json").is_file()


def repo_root(start: Path | None = None) -> Path:
    """The checkout holding ``start`` (default: the current folder), else the one this package sits in.

    Raises:
        FileNotFoundError: neither is a checkout (an installed, non-editable copy run elsewhere).
    """
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents, OWN_CHECKOUT):
        if is_checkout(folder):
            return folder
    raise FileNotFoundError(
        "function_app.py not found here, in a parent folder or where hastegeo-dev is installed; run from the repository"
    )
