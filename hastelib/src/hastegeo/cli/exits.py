"""What ``haste`` exits with, and the one place that turns an error into a sentence and an exit code.

Exit codes (also in the README, and held by tests/e2e/test_cli_installed.py)::

    0  ok (a followed job succeeded)
    1  the followed job failed
    2  usage: a bad option, argument or request file (nothing was sent)
    3  the followed job was cancelled
    4  the job was still running when --timeout ran out
    5  not found (404)
    6  refused by the API: invalid request (the fields it names), not signed in (401),
       a role or project membership missing (403), a conflict (409)
    7  server or transport: nothing answered, the connection was reset, a timeout, DNS, TLS,
       a 5xx, or a 429/503 still answered after the retries its Retry-After allowed
  130  interrupted (Ctrl-C)

Errors the user or the network can cause become :class:`Failure` here, in
:func:`explain`, the way httpx maps httpcore's errors in one function; anything
else is a bug and keeps its traceback.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import urllib.error
import urllib.parse
from dataclasses import dataclass, field
from enum import IntEnum

from hastegeo.cli.client import ApiError, NotTheApi, WatchTimeout

ROLES_HINT = (
    "roles: Haste.Reader reads a project's jobs, Haste.Submitter also submits and cancels them, "
    "Haste.Admin does everything; an owner of the API's app registration assigns them (docs/adr/0007)"
)
SIGN_IN_HINT = (
    "sign in: set HASTE_API_SCOPE=api://<client id>/.default (uses your `az login`, else a device code) "
    "or HASTE_API_TOKEN to a token for the API; HASTE_FUNCTION_KEY where the app checks function keys"
)


class ExitCode(IntEnum):
    OK = 0
    JOB_FAILED = 1
    USAGE = 2
    JOB_CANCELLED = 3
    TIMED_OUT = 4
    NOT_FOUND = 5
    REFUSED = 6
    UNAVAILABLE = 7
    INTERRUPTED = 130


JOB_EXITS = {"succeeded": ExitCode.OK, "failed": ExitCode.JOB_FAILED, "cancelled": ExitCode.JOB_CANCELLED}


@dataclass
class Failure(Exception):
    """An error to print as ``error: <message>`` (and indented ``lines``) before exiting with ``code``."""

    code: ExitCode
    message: str
    lines: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return self.message


def usage(message: str) -> Failure:
    return Failure(ExitCode.USAGE, message)


def explain(exc: BaseException, url: str) -> Failure | None:
    """The failure to report for ``exc`` raised while talking to the API at ``url``; None for a bug."""
    if isinstance(exc, Failure):
        return exc
    if isinstance(exc, ApiError):
        return _api_failure(exc)
    if isinstance(exc, WatchTimeout):
        return Failure(ExitCode.TIMED_OUT, str(exc))
    if isinstance(exc, NotTheApi):
        return Failure(ExitCode.UNAVAILABLE, f"{url} answered, but not as the haste API does ({exc}); is --url right?")
    if isinstance(exc, KeyboardInterrupt):
        return Failure(ExitCode.INTERRUPTED, "interrupted")
    sign_in = _sign_in_failure(exc)
    if sign_in is not None:
        return sign_in
    return _transport_failure(exc, url)


def _api_failure(exc: ApiError) -> Failure:
    body = exc.body
    title = str(body.get("title") or f"HTTP {exc.status}")
    message = f"{title} (HTTP {exc.status})" + (f": {body['detail']}" if body.get("detail") else "")
    lines = [f"{error.get('field') or '(request)'}: {error.get('message')}" for error in body.get("errors") or []]
    if exc.status == 404:
        return Failure(ExitCode.NOT_FOUND, message, lines)
    if exc.status == 401:
        return Failure(ExitCode.REFUSED, message, [*lines, SIGN_IN_HINT])
    if exc.status == 403:
        return Failure(ExitCode.REFUSED, message, [*lines, ROLES_HINT])
    if exc.status in (429, 503) or exc.status >= 500:
        if exc.attempts > 1:
            message += f"; still so after {exc.attempts} tries over {exc.waited:.0f}s, try again later"
        return Failure(ExitCode.UNAVAILABLE, message, lines)
    return Failure(ExitCode.REFUSED, message, lines)


def _sign_in_failure(exc: BaseException) -> Failure | None:
    """azure-identity could not get a token (no ``az login``, device code refused or timed out)."""
    from azure.core.exceptions import ClientAuthenticationError

    if not isinstance(exc, ClientAuthenticationError):
        return None
    first = (exc.message or str(exc)).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return Failure(ExitCode.REFUSED, f"could not sign in: {first}", ["run `az login`, or " + SIGN_IN_HINT])


def _transport_failure(exc: BaseException, url: str) -> Failure | None:
    if isinstance(exc, urllib.error.URLError) and isinstance(exc.reason, BaseException):
        exc = exc.reason  # through a proxy: urllib wraps the same errors
    host = urllib.parse.urlsplit(url).hostname or url
    start = "start the development stack (`make dev`), or point --url / HASTE_API_URL at the API"
    if isinstance(exc, ConnectionRefusedError):
        return Failure(ExitCode.UNAVAILABLE, f"nothing answered at {url} (connection refused)", [start])
    if isinstance(exc, socket.gaierror):
        return Failure(ExitCode.UNAVAILABLE, f"could not resolve {host} (DNS: {exc.strerror})", [start])
    if isinstance(exc, ssl.SSLCertVerificationError):
        return Failure(ExitCode.UNAVAILABLE, f"the TLS certificate of {host} was not accepted: {exc.verify_message}")
    if isinstance(exc, ssl.SSLError):
        reason = exc.reason or exc.strerror or type(exc).__name__
        return Failure(
            ExitCode.UNAVAILABLE, f"TLS with {host} failed ({reason})", ["is the URL https where the API speaks http?"]
        )
    if isinstance(exc, TimeoutError):
        return Failure(ExitCode.UNAVAILABLE, f"{url} did not answer in time (--request-timeout)")
    if isinstance(exc, ConnectionResetError | BrokenPipeError | http.client.HTTPException):
        return Failure(ExitCode.UNAVAILABLE, f"the connection to {url} was closed before an answer ({_name(exc)})")
    if isinstance(exc, OSError):
        return Failure(ExitCode.UNAVAILABLE, f"could not reach {url}: {exc.strerror or _name(exc)}", [start])
    return None


def _name(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
