"""Print, as JSON, how the real ``azure.functions`` indexes ``function_app:app`` of the current folder.

Run as ``python -I function_index.py`` with the working directory an app folder: the
deployment package unpacked into a clean venv, or the repository in the development
venv. Standard library and ``azure.functions`` only, because the clean venv has
nothing else of the tests. It also reports whether anything development-only was
imported or is importable, which the deployed app must never do.
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import json
import os
import sys
from typing import Any

DEV_PREFIXES = ("hastegeo_dev", "hastegeo.devhost", "hastegeo.testing")
PACKAGE_DATA = ("py.typed", "costs/prices.json")


def _plain(value: Any) -> Any:
    """Enum members (AuthLevel.ANONYMOUS, HttpMethod.GET, BindingDirection.OUT) to plain values."""
    value = getattr(value, "value", value)
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def _binding(binding: Any) -> dict[str, Any]:
    spec = {key: _plain(value) for key, value in binding.get_dict_repr().items()}
    keep = ("type", "direction", "name", "queueName", "connection", "route", "methods", "authLevel", "schedule")
    out = {key: spec[key] for key in keep if spec.get(key) is not None}
    if "methods" in out:
        out["methods"] = sorted(str(m).upper() for m in out["methods"])
    if "authLevel" in out:
        out["authLevel"] = str(out["authLevel"]).lower()
    if "runOnStartup" in spec:
        out["runOnStartup"] = bool(spec["runOnStartup"])
    return out


def index() -> dict[str, Any]:
    sys.path.insert(0, os.getcwd())  # what the Python worker does with the app root
    import function_app

    functions = []
    for function in function_app.app.get_functions():
        trigger = function.get_trigger()
        functions.append(
            {
                "name": function.get_function_name(),
                "trigger": _binding(trigger),
                "bindings": sorted(
                    (_binding(b) for b in function.get_bindings() if b is not trigger),
                    key=lambda b: (b.get("type", ""), b.get("name", "")),
                ),
            }
        )
    hastegeo = sys.modules["hastegeo"]
    return {
        "functions": sorted(functions, key=lambda f: f["name"]),
        "imported_dev_modules": sorted(m for m in sys.modules if m.startswith(DEV_PREFIXES)),
        "dev_importable": {name: importlib.util.find_spec(name) is not None for name in DEV_PREFIXES},
        "hastegeo_file": hastegeo.__file__,
        # Package data the app reads at run time (hastelib/pyproject.toml, [tool.setuptools.package-data]).
        "package_data": {name: (importlib.resources.files("hastegeo") / name).is_file() for name in PACKAGE_DATA},
        "function_app_file": function_app.__file__,
        "prefix": sys.prefix,
    }


if __name__ == "__main__":
    json.dump(index(), sys.stdout, indent=1, sort_keys=True)
