"""A small HTTP client for the haste-compute API (standard library only).

The CLI uses it; so do the demo and the benchmark. It raises
:class:`ApiError` carrying the problem+json body, so callers can show the
server's words rather than a status code. A 429 or 503 is sent again after
the ``Retry-After`` the API gave, within ``retry_budget_s`` (the only retry
this client makes, besides resending on a kept-alive connection the server
had closed); connection errors and timeouts are raised as they are, for the
caller to explain (``hastegeo.cli.exits``).

Bearer tokens come either fixed (``bearer_token``) or from a ``token_provider``
called before every request; :class:`CredentialToken` is that provider for an
azure-identity credential, so a ``--watch`` that outlives a token gets a new one.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from azure.core.credentials import TokenCredential

TERMINAL = frozenset({"succeeded", "failed", "cancelled"})
# Statuses the API answers with Retry-After when trying again later can succeed (docs: The API).
RETRIED = frozenset({429, 503})
MAX_RETRY_AFTER_S = 60.0


class ApiError(Exception):
    """The API answered with an error status; ``body`` is its problem+json (or the start of its text)."""

    def __init__(
        self,
        status: int,
        body: dict[str, Any],
        headers: dict[str, str] | None = None,
        *,
        attempts: int = 1,
        waited: float = 0.0,
    ) -> None:
        title = body.get("title") or f"HTTP {status}"
        detail = body.get("detail")
        errors = "; ".join(f"{e.get('field')}: {e.get('message')}" for e in body.get("errors") or [])
        super().__init__(" - ".join(part for part in (f"{status} {title}", detail, errors) if part))
        self.status = status
        self.body = body
        self.headers = headers or {}
        self.attempts = attempts
        self.waited = waited


class NotTheApi(ValueError):
    """A success status whose body is not JSON: something other than the API answered."""


class WatchTimeout(TimeoutError):
    """A followed job had not ended when the caller's time ran out (not a transport timeout)."""


def retry_after_s(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date); None if absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _proxied(parts: urllib.parse.SplitResult) -> bool:
    """Whether the environment sends requests to this URL through a proxy (as urllib would)."""
    proxy = urllib.request.getproxies().get(parts.scheme)
    return bool(proxy) and not urllib.request.proxy_bypass(parts.hostname or "")


@dataclass
class CredentialToken:
    """A bearer token for ``scope`` from ``credential``, reused until shortly before it expires.

    Entra access tokens live about an hour; a job can run longer, so the token is
    fetched again once it is within ``refresh_margin_s`` of its expiry (or half
    its lifetime, for tokens shorter than twice the margin). Asking the credential on
    every request would start an ``az`` process per poll with AzureCliCredential.
    """

    credential: TokenCredential
    scope: str
    refresh_margin_s: float = 300.0
    clock: Callable[[], float] = time.time
    _token: str = ""
    _refresh_at: float = 0.0

    def __call__(self) -> str:
        now = self.clock()
        if not self._token or now >= self._refresh_at:
            issued = self.credential.get_token(self.scope)
            lifetime = max(0.0, issued.expires_on - now)
            self._token = issued.token
            self._refresh_at = issued.expires_on - min(self.refresh_margin_s, lifetime / 2)
        return self._token


@dataclass
class ApiClient:
    """Calls the API over one kept-alive connection per thread.

    Opening a TCP connection per request cost more client and server CPU than the
    request itself on loopback (and a TLS handshake per request against Azure), so
    each thread keeps its connection between requests. A proxy named by the
    environment (``https_proxy`` etc.) is honoured by sending through ``urllib``, as
    before, one connection per request.
    """

    base_url: str
    function_key: str | None = None
    timeout: float = 30.0
    # An Entra access token for the API's app registration (App Service authentication).
    bearer_token: str | None = None
    # Called before every request for a fresh token (wins over bearer_token), e.g. CredentialToken.
    token_provider: Callable[[], str] | None = None
    # How long in all a request may wait on Retry-After answers (429, 503) before its error is raised.
    retry_budget_s: float = 60.0
    sleep: Callable[[float], None] = time.sleep
    _local: threading.local = field(default_factory=threading.local, init=False, repr=False, compare=False)
    _through_proxy: dict[tuple[str, str], bool] = field(default_factory=dict, init=False, repr=False, compare=False)

    def request(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        """Send one request; answer ``(status, JSON body, headers)`` or raise :class:`ApiError`.

        A 429 or 503 is sent again after its ``Retry-After`` (at most ``MAX_RETRY_AFTER_S``) while the
        waits fit in ``retry_budget_s``. Submissions are safe to resend: the CLI sends an Idempotency-Key.
        """
        waited, attempts = 0.0, 1
        while True:
            try:
                return self._request_once(method, path, body, headers)
            except ApiError as exc:
                asked = retry_after_s(_header(exc.headers, "Retry-After")) if exc.status in RETRIED else None
                wait = None if asked is None else min(asked, MAX_RETRY_AFTER_S)
                if wait is None or waited + wait > self.retry_budget_s:
                    exc.attempts, exc.waited = attempts, waited
                    raise
            self.sleep(wait)
            waited += wait
            attempts += 1

    def _request_once(
        self, method: str, path: str, body: Any, headers: dict[str, str] | None
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        data = None if body is None else json.dumps(body).encode()
        all_headers = {"Accept": "application/json", **(headers or {})}
        if data is not None:
            all_headers["Content-Type"] = "application/json"
        if self.function_key:
            all_headers["x-functions-key"] = self.function_key
        token = self.token_provider() if self.token_provider is not None else self.bearer_token
        if token:
            all_headers["Authorization"] = f"Bearer {token}"
        url = self.base_url.rstrip("/") + path
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url}")
        origin = (parts.scheme, parts.netloc)
        if origin not in self._through_proxy:  # the environment is read once per origin, not per request
            self._through_proxy[origin] = _proxied(parts)
        if self._through_proxy[origin]:
            status, raw, response_headers = self._via_urllib(method, url, data, all_headers)
        else:
            status, raw, response_headers = self._kept_alive(parts, method, data, all_headers)
        if status >= 300:
            try:
                problem = json.loads(raw)
            except ValueError:
                problem = {"title": raw.decode(errors="replace")[:200]}
            raise ApiError(status, problem if isinstance(problem, dict) else {}, response_headers)
        try:
            answer = json.loads(raw or b"{}")
        except ValueError:
            raise NotTheApi(f"HTTP {status} with a body that is not JSON") from None
        if not isinstance(answer, dict):
            raise NotTheApi(f"HTTP {status} with JSON that is not an object")
        return status, answer, response_headers

    def close(self) -> None:
        """Close this thread's connection (other threads' connections close when they are collected)."""
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None

    def _kept_alive(
        self, parts: urllib.parse.SplitResult, method: str, data: bytes | None, headers: dict[str, str]
    ) -> tuple[int, bytes, dict[str, str]]:
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        origin = (parts.scheme, parts.netloc)
        for attempt in (1, 2):
            connection, reused = self._connection(origin)
            try:
                connection.request(method, target or "/", body=data, headers=headers)
                response = connection.getresponse()
                raw = response.read()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.close()
                # A kept-alive connection the server had already closed: the request never
                # reached it, so sending it again on a new connection is safe. Only then.
                if reused and attempt == 1:
                    continue
                raise
            except BaseException:
                self.close()
                raise
            self._local.used = True
            if response.will_close:
                self.close()
            return response.status, raw, dict(response.getheaders())
        raise AssertionError("unreachable")

    def _connection(self, origin: tuple[str, str]) -> tuple[http.client.HTTPConnection, bool]:
        """This thread's connection to ``origin`` and whether it has carried a request before."""
        local = self._local
        connection = getattr(local, "connection", None)
        if connection is not None and getattr(local, "origin", None) == origin:
            return connection, bool(getattr(local, "used", False))
        self.close()
        scheme, netloc = origin
        kind = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
        connection = kind(netloc, timeout=self.timeout)
        local.connection, local.origin, local.used = connection, origin, False
        return connection, False

    def _via_urllib(
        self, method: str, url: str, data: bytes | None, headers: dict[str, str]
    ) -> tuple[int, bytes, dict[str, str]]:
        req = urllib.request.Request(url, data=data, method=method, headers=headers)  # noqa: S310
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as response:  # noqa: S310
                return response.status, response.read(), dict(response.headers)
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read(), dict(exc.headers)

    def submit(self, request: dict[str, Any], idempotency_key: str | None = None) -> dict[str, Any]:
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return self.request("POST", "/api/jobs", request, headers)[1]

    def get(self, job_id: str, *, read_urls: bool = False) -> dict[str, Any]:
        """The job; with ``read_urls``, each output carries a signed read URL (valid minutes, never stored)."""
        query = "?readUrls=true" if read_urls else ""
        return self.request("GET", f"/api/jobs/{urllib.parse.quote(job_id, safe='')}{query}")[1]

    def list(self, project_id: str, state: str | None = None, page_size: int = 50) -> Iterator[dict[str, Any]]:
        query = {"projectId": project_id, "pageSize": str(page_size)}
        return self._listed({**query, "state": state} if state else query)

    def _listed(self, query: dict[str, str]) -> Iterator[dict[str, Any]]:
        """Every job ``GET /api/jobs`` lists for ``query``, page after page (each page's token leads on)."""
        token: str | None = None
        while True:
            page_query = {**query, "continuationToken": token} if token else query
            page = self.request("GET", "/api/jobs?" + urllib.parse.urlencode(page_query))[1]
            yield from page.get("items", [])
            token = page.get("continuationToken")
            if not token:
                return

    def logs(self, job_id: str, stream: str = "stdout", offset: int = 0) -> dict[str, Any]:
        """The next part of the job's ``stream`` (stdout, stderr) from byte ``offset`` (see hastegeo.cli.logs)."""
        query = urllib.parse.urlencode({"stream": stream, "offset": str(offset)})
        return self.request("GET", f"/api/jobs/{urllib.parse.quote(job_id, safe='')}/logs?{query}")[1]

    def cancel(self, job_id: str) -> dict[str, Any]:
        return self.request("POST", f"/api/jobs/{urllib.parse.quote(job_id, safe='')}/cancel")[1]

    def backends(self) -> dict[str, Any]:
        return self.request("GET", "/api/backends")[1]

    def retry(self, job_id: str, idempotency_key: str | None = None) -> dict[str, Any]:
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return self.request("POST", f"/api/jobs/{urllib.parse.quote(job_id)}/retry", None, headers)[1]

    def submit_group(self, request: dict[str, Any], idempotency_key: str | None = None) -> dict[str, Any]:
        """``POST /api/groups``: the group as accepted (its items are made into jobs shortly after)."""
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return self.request("POST", "/api/groups", request, headers)[1]

    def get_group(self, group_id: str) -> dict[str, Any]:
        return self.request("GET", f"/api/groups/{urllib.parse.quote(group_id, safe='')}")[1]

    def cancel_group(self, group_id: str) -> dict[str, Any]:
        return self.request("POST", f"/api/groups/{urllib.parse.quote(group_id, safe='')}/cancel")[1]

    def retry_group(self, group_id: str) -> dict[str, Any]:
        """The group with its failed and cancelled items made again; ``retried`` says how many."""
        return self.request("POST", f"/api/groups/{urllib.parse.quote(group_id, safe='')}/retry")[1]

    def group_jobs(self, group_id: str, page_size: int = 200) -> Iterator[dict[str, Any]]:
        """The item jobs of a group made so far, in item order."""
        return self._listed({"groupId": group_id, "pageSize": str(page_size)})

    def watch_group(
        self,
        group_id: str,
        on_change: Callable[[dict[str, Any]], None],
        *,
        interval: float = 1.0,
        timeout: float | None = 3600.0,
    ) -> dict[str, Any]:
        """Follow a group until every item has ended, calling ``on_change`` with the group when its counts change.

        Raises:
            WatchTimeout: the group had not completed within ``timeout`` seconds.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        shown: Any = None
        while True:
            group = self.get_group(group_id)
            if (group.get("made"), group.get("counts")) != shown:
                shown = (group.get("made"), group.get("counts"))
                on_change(group)
            if group.get("state") == "completed":
                return group
            if deadline is not None and time.monotonic() > deadline:
                raise WatchTimeout(f"group {group_id} is still {group.get('state')} after {timeout:.0f}s")
            time.sleep(interval)

    def costs(self, project_id: str, *, start: str | None = None, end: str | None = None) -> dict[str, Any]:
        """What the project's jobs cost from ``start`` to ``end`` (``YYYY-MM-DD``; default: this month)."""
        query = {name: value for name, value in (("from", start), ("to", end)) if value}
        suffix = f"?{urllib.parse.urlencode(query)}" if query else ""
        return self.request("GET", f"/api/projects/{urllib.parse.quote(project_id, safe='')}/costs{suffix}")[1]

    def health(self) -> dict[str, Any]:
        return self.request("GET", "/api/health")[1]

    def watch(
        self,
        job_id: str,
        on_event: Callable[[dict[str, Any]], None],
        *,
        interval: float = 0.25,
        timeout: float | None = 600.0,
    ) -> dict[str, Any]:
        """Follow a job until it ends (or ``timeout`` runs out, if given), calling ``on_event`` once per new event.

        Raises:
            WatchTimeout: the job had not ended within ``timeout`` seconds.
        """
        seen = 0
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            job = self.get(job_id)
            history = job.get("history", [])
            folded = job.get("historyFolded", 0)
            # Events beyond the kept head are renumbered when folding; track by count.
            total = len(history) + folded
            for event in history[max(0, len(history) - (total - seen)) :] if total > seen else []:
                on_event(event)
            seen = total
            if job.get("state") in TERMINAL:
                return job
            if deadline is not None and time.monotonic() > deadline:
                raise WatchTimeout(f"job {job_id} is still {job.get('state')} after {timeout:.0f}s")
            time.sleep(interval)


def _header(headers: dict[str, str], name: str) -> str | None:
    """A response header by name, whatever its case (http.client keeps the server's)."""
    return next((value for key, value in headers.items() if key.lower() == name.lower()), None)
