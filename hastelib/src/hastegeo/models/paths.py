"""Relative path names a client may give (input blobs, names under ``inputs/``).

Kept apart from :mod:`hastegeo.models.job` so the workload side can check
the same rule without importing the job models. Standard library only.
"""

from __future__ import annotations

import re

# No leading '/', no '.' or '..' segment, only word characters, '-', '.', ' ' and '/'.
# Always used with fullmatch: a '$' would also match before a trailing newline.
_SAFE_PATH = re.compile(r"(?!/)(?!.*(?:^|/)\.\.?(?:/|\Z))[\w\-. /]+")


def check_relative_path(value: str) -> str:
    """A relative path with no ``..``/``.`` segments, no scheme and no leading slash."""
    if not _SAFE_PATH.fullmatch(value) or "//" in value:
        raise ValueError("must be a relative path without '..', '.', '//' or a leading '/'")
    return value


def job_prefix(job_id: str) -> str:
    """Where a job's files live in the outputs container: outputs, logs, checkpoints. Its own id only, so
    one job's files are never another's (a job id is unique across projects)."""
    return f"jobs/{job_id}"
