"""W3C trace context (``traceparent``, ``tracestate``) carried by an upstream request, checked (pure).

An upstream service may put its trace context in a ``jobs-requests`` message so the job's
trace joins its own. A bad value costs the link, never the job: it is dropped and the job's
history says why (https://www.w3.org/TR/trace-context/).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

# version-traceid-parentid-flags; version ff is invalid, as are all-zero ids.
_TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?")
# list-member = key "=" value; at most 32 members, 512 characters in all.
_TRACESTATE_KEY = re.compile(r"[a-z0-9][_0-9a-z\-*/]{0,255}|[a-z0-9][_0-9a-z\-*/]{0,240}@[a-z][_0-9a-z\-*/]{0,13}")
_TRACESTATE_VALUE = re.compile(r"[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]")
TRACESTATE_MAX_CHARS = 512
TRACESTATE_MAX_MEMBERS = 32
ENVELOPE_FIELDS = ("traceparent", "tracestate")


def valid_traceparent(value: object) -> bool:
    """Whether ``value`` is a W3C ``traceparent`` this service can continue."""
    if not isinstance(value, str):
        return False
    match = _TRACEPARENT.fullmatch(value)
    if match is None:
        return False
    version, trace_id, parent_id, _flags, rest = match.groups()
    if version == "ff" or trace_id == "0" * 32 or parent_id == "0" * 16:
        return False
    return version != "00" or rest is None  # version 00 has exactly four fields


def valid_tracestate(value: object) -> bool:
    """Whether ``value`` is a W3C ``tracestate`` header value (empty members allowed, as the spec says)."""
    if not isinstance(value, str) or len(value) > TRACESTATE_MAX_CHARS:
        return False
    members = [member.strip() for member in value.split(",")]
    present = [member for member in members if member]
    if not present or len(present) > TRACESTATE_MAX_MEMBERS:
        return False
    keys = []
    for member in present:
        key, sep, val = member.partition("=")
        if not sep or not _TRACESTATE_KEY.fullmatch(key) or not _TRACESTATE_VALUE.fullmatch(val):
            return False
        keys.append(key)
    return len(set(keys)) == len(keys)


@dataclass(frozen=True)
class TraceContext:
    """The trace context a request carried, with notes on what was dropped (for the job's history)."""

    traceparent: str | None = None
    tracestate: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)


def check(traceparent: object, tracestate: object) -> TraceContext:
    """Keep what is valid; say what was not. A ``tracestate`` without a valid ``traceparent`` is meaningless."""
    notes: list[str] = []
    parent: str | None = None
    state: str | None = None
    if traceparent is not None:
        if valid_traceparent(traceparent):
            parent = str(traceparent)
        else:
            notes.append("the request's traceparent is not a W3C trace context; the job starts a trace of its own")
    if tracestate is not None:
        if parent is not None and valid_tracestate(tracestate):
            state = str(tracestate)
        elif parent is not None:
            notes.append("the request's tracestate is not a W3C tracestate; it was dropped")
        else:
            notes.append("the request's tracestate came without a valid traceparent; it was dropped")
    return TraceContext(parent, state, tuple(notes))


def without_envelope(body: Any) -> Any:
    """A queue request's decoded body without its trace context members (anything else unchanged)."""
    if not isinstance(body, dict):
        return body
    return {key: value for key, value in body.items() if key not in ENVELOPE_FIELDS}


def of_message(text: str) -> TraceContext:
    """The checked trace context of a queue request's text; none when it is not a JSON object.

    Read before the request is validated, so even a request that is then rejected is traced
    as part of the upstream trace.
    """
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):  # the request parser refuses it with the reason
        return TraceContext()
    if not isinstance(body, dict):
        return TraceContext()
    return check(body.get("traceparent"), body.get("tracestate"))
