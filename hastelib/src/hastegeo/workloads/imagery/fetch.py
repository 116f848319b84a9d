"""Download an https source for a workload, only from hosts the operator allows.

A URL in a job request is attacker-controlled, so the checks are strict and
each is a pure function the tests exercise without a network:

- scheme must be ``https``; no user/password in the URL;
- the host must be in the allowlist (``HASTE_FETCH_ALLOWED_HOSTS``, comma
  separated; an entry ``*.example.com`` allows sub-domains). A job parameter
  may narrow the list, never widen it;
- every address the host resolves to must be public: private, loopback,
  link-local, multicast, reserved and unspecified addresses are refused
  (``HASTE_FETCH_ALLOW_PRIVATE=1`` lifts this, for tests only), and the
  connection goes to the vetted address so DNS cannot change between the
  check and the connect;
- a redirect may only go to the same host, over https;
- the body may not exceed the size cap (``HASTE_FETCH_MAX_BYTES``, default
  1 GiB; a parameter may lower it), checked on ``Content-Length`` and while
  streaming. The file appears under its final name only when complete.

Standard library only.
"""

from __future__ import annotations

import http.client
import ipaddress
import os
import socket
import ssl
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, cast
from urllib.parse import urljoin, urlsplit

from hastegeo.workloads._run.harness import WorkloadError

ALLOWED_HOSTS_VARIABLE = "HASTE_FETCH_ALLOWED_HOSTS"
MAX_BYTES_VARIABLE = "HASTE_FETCH_MAX_BYTES"
ALLOW_PRIVATE_VARIABLE = "HASTE_FETCH_ALLOW_PRIVATE"
DEFAULT_MAX_BYTES = 1 << 30
MAX_REDIRECTS = 5
TIMEOUT_SECONDS = 60.0
CHUNK = 1 << 20


class FetchRefused(WorkloadError):
    """The URL, its address, a redirect or the body broke the fetch policy."""


@dataclass(frozen=True)
class FetchPolicy:
    allowed_hosts: frozenset[str]
    max_bytes: int = DEFAULT_MAX_BYTES
    allow_private: bool = False

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str] | None = None,
        narrow_hosts: Iterable[str] | None = None,
        narrow_max_bytes: int | None = None,
    ) -> FetchPolicy:
        """The operator's policy from the environment, optionally narrowed by job parameters."""
        env = os.environ if environ is None else environ
        hosts = frozenset(_normalise_host(h) for h in env.get(ALLOWED_HOSTS_VARIABLE, "").split(",") if h.strip())
        if narrow_hosts is not None:
            hosts = hosts & frozenset(_normalise_host(h) for h in narrow_hosts)
        try:
            max_bytes = int(env.get(MAX_BYTES_VARIABLE, DEFAULT_MAX_BYTES))
        except ValueError as exc:
            raise WorkloadError(f"{MAX_BYTES_VARIABLE} must be an integer") from exc
        if narrow_max_bytes is not None:
            max_bytes = min(max_bytes, narrow_max_bytes)
        allow_private = env.get(ALLOW_PRIVATE_VARIABLE, "").strip().lower() in {"1", "true", "yes"}
        return cls(allowed_hosts=hosts, max_bytes=max_bytes, allow_private=allow_private)


@dataclass(frozen=True)
class Target:
    url: str
    host: str
    port: int
    path: str


def _normalise_host(host: str) -> str:
    return host.strip().lower().rstrip(".")


def host_allowed(host: str, allowed: Iterable[str]) -> bool:
    """Exact match, or a ``*.suffix`` entry matching a strict sub-domain."""
    host = _normalise_host(host)
    for entry in allowed:
        if entry.startswith("*.") and host.endswith(entry[1:]) and host != entry[2:]:
            return True
        if host == entry:
            return True
    return False


def redact_url(url: str) -> str:
    """The URL without its query string, for messages (a query may carry a token)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}{parts.path}"


def check_url(url: str, policy: FetchPolicy) -> Target:
    """Validate scheme, credentials and host; return where to connect. Raises :class:`FetchRefused`."""
    try:
        parts = urlsplit(url)
        port = parts.port or 443
    except ValueError as exc:
        raise FetchRefused(f"malformed URL {redact_url(url)!r}") from exc
    if parts.scheme.lower() != "https":
        raise FetchRefused(f"only https URLs are fetched, got scheme {parts.scheme or '(none)'!r}")
    if parts.username or parts.password:
        raise FetchRefused("URLs with credentials are refused")
    host = _normalise_host(parts.hostname or "")
    if not host:
        raise FetchRefused(f"URL {redact_url(url)!r} has no host")
    if not policy.allowed_hosts:
        raise FetchRefused(f"no host is allowed for https sources (set {ALLOWED_HOSTS_VARIABLE})")
    if not host_allowed(host, policy.allowed_hosts):
        raise FetchRefused(f"host {host!r} is not in the allowlist ({', '.join(sorted(policy.allowed_hosts))})")
    path = parts.path or "/"
    if parts.query:
        path = f"{path}?{parts.query}"
    return Target(url=url, host=host, port=port, path=path)


def check_address(address: str, allow_private: bool) -> None:
    """Refuse an address that is not globally routable (unless private addresses are allowed for tests)."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if allow_private:
        return
    if (
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
        or not ip.is_global
    ):
        raise FetchRefused(f"address {ip} is not public; refusing to connect")


def check_redirect(current: Target, location: str | None, policy: FetchPolicy) -> Target:
    """The target of a redirect: https, the same host, and allowed. Raises :class:`FetchRefused`."""
    if not location:
        raise FetchRefused("redirect without a Location header")
    following = check_url(urljoin(current.url, location), policy)
    if following.host != current.host:
        raise FetchRefused(f"redirect from {current.host!r} to another host {following.host!r} is refused")
    return following


def check_size(declared: str | None, max_bytes: int) -> None:
    if declared is None:
        return
    try:
        size = int(declared)
    except ValueError as exc:
        raise FetchRefused(f"invalid Content-Length {declared!r}") from exc
    if size > max_bytes:
        raise FetchRefused(f"source is {size} bytes, more than the {max_bytes}-byte cap")


Resolver = Callable[[str, int], list[str]]


def resolve(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (what :func:`check_address` vets)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise WorkloadError(f"cannot resolve {host!r}: {exc.strerror}") from exc
    return sorted({str(info[4][0]) for info in infos})


class Response(Protocol):
    status: int

    def getheader(self, name: str, default: str | None = None) -> str | None: ...

    def read(self, amt: int | None = None) -> bytes: ...


class Connection(Protocol):
    def request(self, method: str, url: str, headers: Mapping[str, str] = ...) -> None: ...

    def getresponse(self) -> Response: ...

    def close(self) -> None: ...


ConnectionFactory = Callable[[Target, str], Connection]


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """HTTPS to a vetted address, with the certificate checked against the host name."""

    def __init__(self, target: Target, address: str, context: ssl.SSLContext) -> None:
        super().__init__(target.host, target.port, timeout=TIMEOUT_SECONDS, context=context)
        self._address = address
        self._context = context

    def connect(self) -> None:
        raw = socket.create_connection((self._address, self.port), timeout=self.timeout)
        self.sock = self._context.wrap_socket(raw, server_hostname=self.host)


def https_connection(target: Target, address: str) -> Connection:
    return cast(Connection, _PinnedHTTPSConnection(target, address, ssl.create_default_context()))


@dataclass
class Fetcher:
    """Downloads one URL under a policy; the resolver and connection are injectable for tests."""

    policy: FetchPolicy
    resolver: Resolver = resolve
    connect: ConnectionFactory = https_connection
    visited: list[str] = field(default_factory=list)

    def fetch(self, url: str, destination: Path) -> int:
        """Write the body to ``destination``; return its size. Raises :class:`WorkloadError`."""
        target = check_url(url, self.policy)
        for _ in range(MAX_REDIRECTS + 1):
            addresses = self.resolver(target.host, target.port)
            if not addresses:
                raise WorkloadError(f"{target.host!r} resolved to no address")
            for address in addresses:
                check_address(address, self.policy.allow_private)
            self.visited.append(redact_url(target.url))
            connection = self.connect(target, addresses[0])
            try:
                host_header = target.host if target.port == 443 else f"{target.host}:{target.port}"
                connection.request("GET", target.path, headers={"Host": host_header, "User-Agent": "haste-compute"})
                response = connection.getresponse()
                if response.status in {301, 302, 303, 307, 308}:
                    target = check_redirect(target, response.getheader("Location"), self.policy)
                    continue
                if response.status != 200:
                    raise WorkloadError(f"GET {redact_url(target.url)} answered HTTP {response.status}")
                check_size(response.getheader("Content-Length"), self.policy.max_bytes)
                return self._stream(response, destination)
            except (OSError, http.client.HTTPException) as exc:
                raise WorkloadError(f"GET {redact_url(target.url)} failed: {type(exc).__name__}: {exc}") from exc
            finally:
                connection.close()
        raise FetchRefused(f"more than {MAX_REDIRECTS} redirects from {redact_url(url)}")

    def _stream(self, response: Response, destination: Path) -> int:
        partial = destination.with_name(destination.name + ".part")
        written = 0
        try:
            with partial.open("wb") as handle:
                while chunk := response.read(CHUNK):
                    written += len(chunk)
                    if written > self.policy.max_bytes:
                        raise FetchRefused(f"source exceeds the {self.policy.max_bytes}-byte cap")
                    handle.write(chunk)
            partial.replace(destination)
        finally:
            partial.unlink(missing_ok=True)
        return written
