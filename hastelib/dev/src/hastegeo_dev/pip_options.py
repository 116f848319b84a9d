"""Hand pip's package sources to uv, so ``make install`` with uv fetches from where pip would.

``make install`` installs the pinned packages with uv, about four times faster than pip
(docs/adr/0034). uv reads none of pip's configuration, neither ``pip.conf`` nor the
``PIP_*`` variables (https://docs.astral.sh/uv/pip/compatibility/), so on a machine set up
for pip (a private index, a local mirror, a folder of wheels, a constraints file) uv would
go to PyPI instead. ``python pip_options.py`` prints the uv options for the sources
``pip config list`` shows, one per line, for the Makefile to pass on.

Run as a file, before anything is installed: the standard library only.
"""

from __future__ import annotations

import subprocess
import sys

# pip's setting -> uv's option; the settings that say where packages come from and which versions may.
OPTIONS = {
    "index-url": "--index-url",
    "extra-index-url": "--extra-index-url",
    "find-links": "--find-links",
    "constraint": "--constraint",
}
# Where a value comes from, weakest first: ``pip install`` reads its own section over
# ``global``, and the PIP_* variables (shown as ``:env:``) over every file.
SCOPES = ("global", "install", ":env:")


def uv_options(config_list: str) -> list[str]:
    """uv's options for the output of ``pip config list`` (``scope.name='value'`` lines)."""
    chosen: dict[str, tuple[int, str]] = {}
    for line in config_list.splitlines():
        key, sep, quoted = line.partition("=")
        scope, _, name = key.rpartition(".")
        if not sep or name not in OPTIONS or scope not in SCOPES:
            continue
        rank = SCOPES.index(scope)
        if name not in chosen or rank >= chosen[name][0]:
            chosen[name] = (rank, quoted.strip().strip("'\""))
    # pip takes the best version any index offers; uv, by default, only the first index's that has the package.
    options = ["--index-strategy=unsafe-best-match"] if "extra-index-url" in chosen else []
    for name, (_, value) in chosen.items():
        options += [f"{OPTIONS[name]}={item}" for item in value.split()]
    return options


def main() -> int:
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=False
    )
    print("\n".join(uv_options(listed.stdout if listed.returncode == 0 else "")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
