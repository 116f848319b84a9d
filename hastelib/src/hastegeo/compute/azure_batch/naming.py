"""Deterministic Batch ids. Pure."""

from __future__ import annotations

import hashlib
import re

MAX_ID = 64
PREFIX = "haste-"
_INVALID = re.compile(r"[^a-z0-9_-]+")


def provider_id(name: str, prefix: str = PREFIX) -> str:
    """A Batch id (≤ 64 lowercase letters, digits, ``-``, ``_``) derived from ``name``.

    Batch ids are case-insensitive, so ``Job1`` and ``job1`` would collide:
    whenever the name had to be changed (case, characters, length) a short
    hash of the original is appended, keeping the mapping one-to-one.
    """
    lowered = name.lower()
    clean = _INVALID.sub("-", lowered).strip("-_") or "job"
    # The pipeline's names already carry the prefix; do not repeat it.
    candidate = clean if clean.startswith(prefix) else f"{prefix}{clean}"
    if clean == name and len(candidate) <= MAX_ID:
        return candidate
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:10]
    room = MAX_ID - len(prefix) - len(digest) - 1
    return f"{prefix}{clean[:room].rstrip('-_')}-{digest}"
