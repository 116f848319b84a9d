"""The one definition of a job or project id, for every place that checks or documents one.

An id is 1-63 characters of lowercase letters, digits and ``-``, starting with a
letter or digit: safe as a blob path segment, a queue message field and a
provider resource name on every backend. The request model, the queue message,
the continuation token, the HTTP routes, the OpenAPI document and the project
groups setting all take it from here (``tests/unit/core/test_ids.py`` fails on a
copy elsewhere).
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time

ID_BODY = r"[a-z0-9][a-z0-9-]{0,62}"
"""The id as an unanchored regex, to build larger patterns (a URL path, say)."""

ID = re.compile(ID_BODY)
"""Use with ``fullmatch`` only: Python's ``$`` would let a trailing ``"\\n"`` through."""

ID_PATTERN = f"^{ID_BODY}$"
"""For pydantic ``pattern=`` and JSON Schema ``"pattern"`` only (Rust and ECMA-262: ``$`` ends the text)."""


ID_RULE = "1-63 lowercase letters, digits and '-', starting with a letter or digit"
"""The rule in words, for error messages."""


def is_id(value: str) -> bool:
    """True when ``value`` is a whole, valid id."""
    return ID.fullmatch(value) is not None


def new_job_id() -> str:
    """Time-ordered, lowercase, safe as a provider id on every backend."""
    return f"{time.time_ns() // 1_000_000:011x}{secrets.token_hex(6)}"


def keyed_job_id(project_id: str, idempotency_key: str) -> str:
    """The same project and key always name the same job, which makes a retried POST safe."""
    return "k" + hashlib.sha256(f"{project_id}\x00{idempotency_key}".encode()).hexdigest()[:22]
