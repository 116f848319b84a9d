"""Routes that change state take JSON and nothing else: anything else is a 415 before it is read.

A browser sends ``text/plain``, ``application/x-www-form-urlencoded`` and
``multipart/form-data`` across sites without asking first (no CORS preflight), with
whatever cookies or host-injected identity go with it. Refusing every other media type
turns such a request into a 415 that changes nothing, so only a page the API's CORS
rule allows can send a body that is acted on. A body without a ``Content-Type`` is
refused the same way (what it is would be a guess); a request with no body needs none.
``application/json`` may carry parameters (``charset=utf-8``): JSON is UTF-8 whatever
they say (RFC 8259), and the body is decoded as such.

Pure: :func:`unsupported_media` decides from the method, the header and the body.
"""

from __future__ import annotations

JSON = "application/json"
# Methods that only read: a body they carry is never acted on.
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def media_type(content_type: str) -> str:
    """``Application/JSON; charset=utf-8`` -> ``application/json`` (the type without parameters, lowered)."""
    return content_type.split(";", 1)[0].strip().lower()


def unsupported_media(method: str, content_type: str | None, body: bytes) -> str | None:
    """Why a request must be refused with 415, or None when its body (if any) is JSON or it only reads."""
    if method.upper() in SAFE_METHODS:
        return None
    if content_type is None or not content_type.strip():
        return None if not body else f"the request has a body but no Content-Type; send it as {JSON}"
    found = media_type(content_type)
    if found == JSON:
        return None
    shown = found[:80] or content_type.strip()[:80]
    return f"this route accepts only {JSON} bodies; the request was sent as {shown!r}"
