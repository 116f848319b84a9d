"""The https fetch policy as pure functions, and the fetcher over an in-memory fake connection (no network)."""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from hastegeo.workloads._run.harness import WorkloadError
from hastegeo.workloads.imagery.fetch import (
    Fetcher,
    FetchPolicy,
    FetchRefused,
    Target,
    check_address,
    check_redirect,
    check_size,
    check_url,
    host_allowed,
)

from .conftest import RunJob

POLICY = FetchPolicy(allowed_hosts=frozenset({"data.example.org", "*.tiles.example.com"}), max_bytes=1000)


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("data.example.org", True),
        ("DATA.example.org.", True),
        ("a.tiles.example.com", True),
        ("tiles.example.com", False),
        ("evil-data.example.org", False),
        ("data.example.org.evil.com", False),
        ("x.tiles.example.com.evil.com", False),
    ],
)
def test_host_allowlist(host: str, allowed: bool) -> None:
    assert host_allowed(host, POLICY.allowed_hosts) is allowed


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://data.example.org/a.tif", "only https"),
        ("ftp://data.example.org/a.tif", "only https"),
        ("file:///etc/passwd", "only https"),
        ("https://other.example.org/a.tif", "not in the allowlist"),
        ("https://user:pw@data.example.org/a.tif", "credentials"),
        ("https:///a.tif", "no host"),
        ("https://data.example.org:99999/a.tif", "malformed"),
    ],
)
def test_check_url_refuses(url: str, reason: str) -> None:
    with pytest.raises(FetchRefused, match=reason):
        check_url(url, POLICY)


def test_check_url_accepts_and_keeps_the_query() -> None:
    target = check_url("https://data.example.org:8443/x/a.tif?sig=abc", POLICY)
    assert (target.host, target.port, target.path) == ("data.example.org", 8443, "/x/a.tif?sig=abc")


def test_nothing_allowed_without_an_allowlist() -> None:
    with pytest.raises(FetchRefused, match="HASTE_FETCH_ALLOWED_HOSTS"):
        check_url("https://data.example.org/a.tif", FetchPolicy(allowed_hosts=frozenset()))


@pytest.mark.parametrize(
    "address",
    ["127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "::1", "fe80::1", "fc00::1",
     "0.0.0.0", "::ffff:127.0.0.1", "224.0.0.1", "100.64.0.1"],
)  # fmt: skip
def test_private_addresses_are_refused(address: str) -> None:
    with pytest.raises(FetchRefused, match="not public"):
        check_address(address, allow_private=False)
    check_address(address, allow_private=True)  # the test-only escape hatch


@pytest.mark.parametrize("address", ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946", "8.8.8.8"])
def test_public_addresses_pass(address: str) -> None:
    check_address(address, allow_private=False)


def test_redirects_stay_on_the_same_host_and_https() -> None:
    current = check_url("https://data.example.org/a.tif", POLICY)
    assert check_redirect(current, "/b.tif", POLICY).url == "https://data.example.org/b.tif"
    with pytest.raises(FetchRefused, match="another host"):
        check_redirect(current, "https://x.tiles.example.com/a.tif", POLICY)  # allowed host, still refused
    with pytest.raises(FetchRefused, match="only https"):
        check_redirect(current, "http://data.example.org/a.tif", POLICY)
    with pytest.raises(FetchRefused, match="Location"):
        check_redirect(current, None, POLICY)


def test_size_cap_on_the_declared_length() -> None:
    check_size("1000", 1000)
    check_size(None, 1000)
    with pytest.raises(FetchRefused, match="cap"):
        check_size("1001", 1000)


def test_policy_from_env_can_only_narrow() -> None:
    env = {"HASTE_FETCH_ALLOWED_HOSTS": "a.org, b.org", "HASTE_FETCH_MAX_BYTES": "500"}
    policy = FetchPolicy.from_env(env, narrow_hosts=["b.org", "evil.org"], narrow_max_bytes=10_000)
    assert policy.allowed_hosts == frozenset({"b.org"})
    assert policy.max_bytes == 500
    assert not policy.allow_private
    assert FetchPolicy.from_env({**env, "HASTE_FETCH_ALLOW_PRIVATE": "1"}).allow_private


@dataclass
class FakeResponse:
    status: int
    headers: dict[str, str]
    body: io.BytesIO

    def getheader(self, name: str, default: str | None = None) -> str | None:
        return self.headers.get(name, default)

    def read(self, amt: int | None = None) -> bytes:
        return self.body.read(amt)


@dataclass
class FakeServer:
    """Answers by path: (status, headers, body); records every connection's address."""

    routes: dict[str, tuple[int, dict[str, str], bytes]]
    connections: list[tuple[str, str]] = field(default_factory=list)

    def connect(self, target: Target, address: str) -> FakeConnection:
        self.connections.append((target.host, address))
        return FakeConnection(self)


@dataclass
class FakeConnection:
    server: FakeServer
    path: str = ""

    def request(self, method: str, url: str, headers: Mapping[str, str] = {}) -> None:
        self.path = url

    def getresponse(self) -> FakeResponse:
        status, headers, body = self.server.routes[self.path]
        return FakeResponse(status, headers, io.BytesIO(body))

    def close(self) -> None:
        pass


def _fetcher(server: FakeServer, address: str = "93.184.216.34") -> Fetcher:
    return Fetcher(POLICY, resolver=lambda host, port: [address], connect=server.connect)


def test_fetch_follows_a_same_host_redirect(tmp_path: Path) -> None:
    server = FakeServer({"/a.tif": (302, {"Location": "/b.tif"}, b""), "/b.tif": (200, {}, b"x" * 10)})
    fetcher = _fetcher(server)
    assert fetcher.fetch("https://data.example.org/a.tif", tmp_path / "a.tif") == 10
    assert (tmp_path / "a.tif").read_bytes() == b"x" * 10
    assert fetcher.visited == ["https://data.example.org/a.tif", "https://data.example.org/b.tif"]


def test_fetch_refuses_a_cross_host_redirect_and_leaves_no_file(tmp_path: Path) -> None:
    server = FakeServer({"/a.tif": (301, {"Location": "https://a.tiles.example.com/a.tif"}, b"")})
    with pytest.raises(FetchRefused, match="another host"):
        _fetcher(server).fetch("https://data.example.org/a.tif", tmp_path / "a.tif")
    assert list(tmp_path.iterdir()) == []


def test_fetch_enforces_the_cap_while_streaming(tmp_path: Path) -> None:
    server = FakeServer({"/big.tif": (200, {}, b"x" * 1001)})  # no Content-Length: caught while reading
    with pytest.raises(FetchRefused, match="cap"):
        _fetcher(server).fetch("https://data.example.org/big.tif", tmp_path / "big.tif")
    assert list(tmp_path.iterdir()) == []
    declared = FakeServer({"/big.tif": (200, {"Content-Length": "5000"}, b"")})
    with pytest.raises(FetchRefused, match="5000 bytes"):
        _fetcher(declared).fetch("https://data.example.org/big.tif", tmp_path / "big.tif")


def test_fetch_refuses_a_host_resolving_to_a_private_address(tmp_path: Path) -> None:
    server = FakeServer({"/a.tif": (200, {}, b"x")})
    with pytest.raises(FetchRefused, match="not public"):
        _fetcher(server, address="169.254.169.254").fetch("https://data.example.org/a.tif", tmp_path / "a.tif")
    assert server.connections == []  # refused before connecting


def test_fetch_reports_http_errors(tmp_path: Path) -> None:
    server = FakeServer({"/a.tif?sig=secret": (404, {}, b"")})
    with pytest.raises(WorkloadError, match="HTTP 404") as caught:
        _fetcher(server).fetch("https://data.example.org/a.tif?sig=secret", tmp_path / "a.tif")
    assert "secret" not in str(caught.value)  # the query (maybe a token) never reaches a message


def test_imagery_refuses_a_url_outside_the_allowlist(run_workload: RunJob, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HASTE_FETCH_ALLOWED_HOSTS", "data.example.org")
    job = run_workload("imagery", {}, {"sources": ["https://evil.example.net/scene.tif?sig=secret"]})
    assert job.code == 2
    assert "host 'evil.example.net' is not in the allowlist" in job.stderr
    assert "secret" not in job.stderr
    assert not job.has_manifest("imagery")
    job = run_workload("imagery", {}, {"sources": ["http://data.example.org/scene.tif"]}, name="plain-http")
    assert job.code == 2
    assert "only https" in job.stderr
