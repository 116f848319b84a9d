"""The app's HTTP route table, as the Functions host indexes it: each function's route and methods.

Read in a fresh interpreter: ``FunctionApp.get_functions()`` indexes an app once per process,
and the test process may have indexed it already (or may later).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache

from hastegeo_dev.checkout import repo_root

UNSAFE_METHODS = ("POST", "PUT", "PATCH", "DELETE")
_READ = """
import json
from hastegeo_dev.devhost.functions import discover, load_app
functions = discover(load_app("function_app:app", "."))
print(json.dumps([[f.name, f.route, list(f.methods) if f.methods else None] for f in functions.http]))
"""


@dataclass(frozen=True)
class Route:
    name: str
    route: str  # the template, without the route prefix: "jobs/{id}/cancel"
    methods: tuple[str, ...] | None  # None: every method

    def unsafe_methods(self) -> tuple[str, ...]:
        """The methods that may change state this route is registered for (every one when it takes any method)."""
        if self.methods is None:
            return UNSAFE_METHODS
        return tuple(method for method in UNSAFE_METHODS if method in self.methods)

    @property
    def openapi_path(self) -> str:
        """``/jobs/{id}/cancel``; a catch-all ``{*path}`` is no path of the document."""
        return "/" + self.route


@lru_cache(maxsize=1)
def http_routes() -> tuple[Route, ...]:
    found = subprocess.run(
        [sys.executable, "-c", _READ], cwd=repo_root(), capture_output=True, text=True, timeout=120, check=True
    )
    rows = json.loads(found.stdout.strip().splitlines()[-1])
    return tuple(
        Route(name, route, tuple(m.upper() for m in methods) if methods else None) for name, route, methods in rows
    )
