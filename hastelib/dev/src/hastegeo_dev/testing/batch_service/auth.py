"""Batch shared-key request signing, checked the way the service checks it. Pure."""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Iterable
from urllib.parse import parse_qs

# The standard headers the signature covers, in order (azure-batch BatchSharedKeyAuthPolicy).
SIGNED_HEADERS = (
    "content-encoding",
    "content-language",
    "content-length",
    "content-md5",
    "content-type",
    "date",
    "if-modified-since",
    "if-match",
    "if-none-match",
    "if-unmodified-since",
    "range",
)


def string_to_sign(
    method: str, raw_path: str, query: str, headers: Iterable[tuple[str, str]], account_name: str
) -> str:
    """The canonical string: method, signed headers, ``ocp-*`` headers, ``/account/path``, sorted query."""
    pairs = list(headers)
    lowered = {name.lower(): value for name, value in pairs if value}
    if method not in ("GET", "HEAD") and "content-length" not in lowered:
        lowered["content-length"] = "0"
    text = method + "\n" + "\n".join(lowered.get(name, "") for name in SIGNED_HEADERS) + "\n"
    ocp = sorted((name.lower(), value) for name, value in pairs if "ocp-" in name and value)
    text += "".join(f"{name}:{value}\n" for name, value in ocp)
    text += f"/{account_name}{raw_path}"
    parsed = parse_qs(query)
    for name in sorted(parsed):
        value = parsed[name][0]
        if value:
            text += f"\n{name}:{value}"
    return text


def sign(account_key: str, text: str) -> str:
    digest = hmac.new(base64.b64decode(account_key), text.encode("utf-8"), hashlib.sha256).digest()
    return base64.b64encode(digest).decode("ascii")


def check(
    authorization: str | None,
    *,
    method: str,
    raw_path: str,
    query: str,
    headers: Iterable[tuple[str, str]],
    account_name: str,
    account_key: str,
) -> str | None:
    """None when the request is signed by this account's key, else a short reason."""
    if not authorization:
        return "the Authorization header is missing"
    scheme, _, credential = authorization.partition(" ")
    name, _, signature = credential.partition(":")
    if scheme != "SharedKey" or not signature:
        return "the Authorization header is not SharedKey account:signature"
    if name != account_name:
        return f"unknown account {name!r}"
    expected = sign(account_key, string_to_sign(method, raw_path, query, headers, account_name))
    if not hmac.compare_digest(expected, signature):
        return "the request signature does not match"
    return None
