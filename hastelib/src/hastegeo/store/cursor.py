"""Continuation tokens for job listings: a signed position in the API's own sort order.

The decision, and why:

- A token names a **position** — ``(createdAt in ms, job id)``, the sort key of the
  listing (newest first, then id) — never a storage marker. The store turns the
  position into wherever its index must start, so a change of how jobs are indexed
  (an active-jobs index, another store) keeps tokens meaningful, and a token shows
  no blob name.
- A token is **signed** (HMAC-SHA256, truncated to 128 bits) over the position *and*
  the query it continues (project and state filter). One that was edited, made up,
  or taken from another project's or filter's listing fails the check, so it can
  never point elsewhere, and the API answers 400 before touching storage.
- A token is **bounded**: anything longer than :data:`TOKEN_MAX_CHARS` or outside
  the base64url alphabet is refused before it is decoded.

Pure: no I/O. The key comes from the caller (the store keeps one in the jobs container);
:func:`decode` asks for it only once a token has the right length and shape, so a
malformed token is refused without any storage call.

Raises :class:`InvalidTokenError` (a ``ValueError``) for every bad token, with a
reason fit to show the client.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from hastegeo.models.ids import is_id

TOKEN_MAX_CHARS = 256
_VERSION = 1
_MAC_BYTES = 16
_SHAPE = re.compile(r"[A-Za-z0-9_-]{1,200}\.[A-Za-z0-9_-]{22}")  # fullmatch
_MS_MAX = 10**13  # the store's index sorts times above 0 and below this


class InvalidTokenError(ValueError):
    """A continuation token this API did not issue for this query. ``reason`` is safe to show."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Position:
    """Where a listing stopped: the last entry it examined, by the listing's sort key.

    Not orderable: the listing's order (newest first, then id) is :func:`hastegeo.store.index.sort_key`'s.
    """

    created_ms: int
    job_id: str


def scope(project_id: str, states: Iterable[str] | None) -> bytes:
    """What a token is bound to: the project and the state filter (order and repeats do not matter)."""
    return f"{project_id}|{','.join(sorted(set(states or ())))}".encode()


def encode(position: Position, bound_to: bytes, key: bytes) -> str:
    """A token for continuing after ``position`` in the listing ``bound_to`` names."""
    payload = json.dumps([_VERSION, position.created_ms, position.job_id], separators=(",", ":")).encode()
    return f"{_b64(payload)}.{_b64(_mac(key, bound_to, payload))}"


def decode(token: str, bound_to: bytes, key: Callable[[], bytes]) -> Position:
    """The position ``token`` holds, if ``key()`` signed it for the listing ``bound_to`` names.

    Raises:
        InvalidTokenError: too long, not a token's shape, or not issued for this listing.
    """
    if len(token) > TOKEN_MAX_CHARS:
        raise InvalidTokenError(f"is longer than {TOKEN_MAX_CHARS} characters; use the token a listing returned")
    if not _SHAPE.fullmatch(token):
        raise InvalidTokenError("is not a continuation token; use the token a listing returned")
    body, _, signature = token.partition(".")
    try:
        payload, mac = _unb64(body), _unb64(signature)
    except (binascii.Error, ValueError):
        raise InvalidTokenError("is not a continuation token; use the token a listing returned") from None
    if not hmac.compare_digest(mac, _mac(key(), bound_to, payload)):
        raise InvalidTokenError(
            "was not issued for this listing (it was altered, or it belongs to another project or state filter)"
        )
    try:
        version, created_ms, job_id = json.loads(payload)
    except (ValueError, TypeError):
        raise InvalidTokenError("is not a continuation token this version understands") from None
    valid = (
        version == _VERSION
        and type(created_ms) is int
        and 0 < created_ms < _MS_MAX
        and isinstance(job_id, str)
        and is_id(job_id)
    )
    if not valid:
        raise InvalidTokenError("is not a continuation token this version understands")
    return Position(created_ms, job_id)


def _mac(key: bytes, bound_to: bytes, payload: bytes) -> bytes:
    return hmac.new(key, len(bound_to).to_bytes(4, "big") + bound_to + payload, hashlib.sha256).digest()[:_MAC_BYTES]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
