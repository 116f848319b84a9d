"""What importing a module loads in a fresh interpreter, for tests that keep a process light."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def modules_loaded_by(statement: str) -> set[str]:
    """The modules a fresh interpreter holds after ``statement``, minus those it holds at start-up."""

    def loaded(code: str) -> set[str]:
        script = f"import sys\n{code}\nprint('\\n'.join(sys.modules))"
        result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, check=True)
        return set(result.stdout.split())

    return loaded(statement) - loaded("")


def not_standard_library(names: set[str]) -> set[str]:
    return {name for name in names if name.split(".")[0] not in sys.stdlib_module_names}
