"""The outbound-fetch policy (``hastegeo.workloads.imagery.fetch``) refuses every SSRF-shaped source. No real network.

DNS is injected through ``Fetcher.resolver`` and connections through ``Fetcher.connect``; a test also makes
``socket.getaddrinfo``/``create_connection`` explode so a leak to the real network would fail loudly.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from hastegeo.workloads._run.harness import WorkloadError
from hastegeo.workloads.imagery import fetch
from hastegeo.workloads.imagery.fetch import (
    Fetcher,
    FetchPolicy,
    FetchRefused,
    Target,
    check_address,
    check_redirect,
    check_url,
)

POLICY = FetchPolicy(allowed_hosts=frozenset({"allowed.example", "*.data.example"}))
PUBLIC = "93.184.216.34"


@pytest.fixture(autouse=True)
def no_real_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> Any:
        raise AssertionError(f"real network used: {args!r}")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.mark.parametrize(
    "url",
    [
        "http://allowed.example/a.tif",
        "file:///etc/passwd",
        "file://allowed.example/etc/passwd",
        "ftp://allowed.example/a.tif",
        "gopher://allowed.example/",
        "HTTP://allowed.example/a.tif",
        "//allowed.example/a.tif",
        "allowed.example/a.tif",
        "data:text/plain,hello",
        "javascript:alert(1)",
    ],
)
def test_non_https_schemes_are_refused(url: str) -> None:
    with pytest.raises(FetchRefused):
        check_url(url, POLICY)


@pytest.mark.parametrize(
    "url",
    [
        "https://allowed.example@evil.example/",
        "https://user:pass@allowed.example/",
        "https://allowed.example:@allowed.example/",
        "https://evil.example#@allowed.example/",
        "https://evil.example\\@allowed.example/",
        "https://allowed.example.evil.example/",
        "https://evil-allowed.example/",
        "https://data.example/",
        "https://xdata.example/",
        "https://evil.example/?u=https://allowed.example/",
        "https://127.0.0.1/",
        "https://[::1]/",
        "https://169.254.169.254/latest/meta-data/",
        "https://allowed.example:99999/",
        "https:///a.tif",
    ],
)
def test_credentials_and_hosts_outside_the_allowlist_are_refused(url: str) -> None:
    with pytest.raises(FetchRefused):
        check_url(url, POLICY)


def test_an_empty_allowlist_refuses_everything() -> None:
    with pytest.raises(FetchRefused):
        check_url("https://allowed.example/a.tif", FetchPolicy(allowed_hosts=frozenset()))


def test_allowed_urls_pass_so_the_refusals_above_mean_something() -> None:
    assert check_url("https://allowed.example/a.tif?x=1", POLICY).host == "allowed.example"
    assert check_url("https://Tiles.Data.Example./t", POLICY).host == "tiles.data.example"


def test_a_job_parameter_can_narrow_the_allowlist_but_never_widen_it() -> None:
    env = {fetch.ALLOWED_HOSTS_VARIABLE: "allowed.example"}
    narrowed = FetchPolicy.from_env(env, narrow_hosts=["allowed.example", "evil.example"])
    assert narrowed.allowed_hosts == frozenset({"allowed.example"})
    with pytest.raises(FetchRefused):
        check_url("https://evil.example/", narrowed)
    assert not FetchPolicy.from_env({}).allow_private


@pytest.mark.parametrize(
    "address",
    [
        "10.0.0.1",
        "10.255.255.255",
        "172.16.0.1",
        "172.31.255.254",
        "192.168.1.1",
        "127.0.0.1",
        "127.1.2.3",
        "0.0.0.0",
        "100.64.0.1",
        "169.254.169.254",
        "169.254.0.1",
        "224.0.0.1",
        "255.255.255.255",
        "::1",
        "::",
        "fe80::1",
        "fe80::1%eth0",
        "fc00::1",
        "fd00:ec2::254",
        "::ffff:127.0.0.1",
        "::ffff:169.254.169.254",
        "::ffff:10.0.0.1",
        "64:ff9b::a9fe:a9fe",
        "2001:db8::1",
    ],
)
def test_private_loopback_link_local_and_reserved_addresses_are_refused(address: str) -> None:
    with pytest.raises(FetchRefused):
        check_address(address, allow_private=False)


def test_a_public_address_is_accepted() -> None:
    check_address(PUBLIC, allow_private=False)
    check_address("2606:4700:4700::1111", allow_private=False)


@pytest.mark.parametrize(
    "location",
    [
        "https://evil.example/a.tif",
        "https://tiles.data.example/a.tif",
        "http://allowed.example/a.tif",
        "file:///etc/passwd",
        "//evil.example/a.tif",
        "https://allowed.example@evil.example/a.tif",
        "https://169.254.169.254/latest/meta-data/",
        None,
        "",
    ],
)
def test_redirects_off_the_host_or_off_https_are_refused(location: str | None) -> None:
    current = check_url("https://allowed.example/a.tif", POLICY)
    with pytest.raises(FetchRefused):
        check_redirect(current, location, POLICY)


def test_a_relative_redirect_on_the_same_host_is_followed() -> None:
    current = check_url("https://allowed.example/a.tif", POLICY)
    assert check_redirect(current, "/b.tif", POLICY).path == "/b.tif"


@dataclass
class FakeResponse:
    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""

    def getheader(self, name: str, default: str | None = None) -> str | None:
        return self.headers.get(name, default)

    def read(self, amt: int | None = None) -> bytes:
        chunk, self.body = self.body, b""
        return chunk


@dataclass
class FakeConnection:
    response: FakeResponse
    requested: list[str] = field(default_factory=list)

    def request(self, method: str, url: str, headers: Mapping[str, str] = {}) -> None:
        self.requested.append(url)

    def getresponse(self) -> FakeResponse:
        return self.response

    def close(self) -> None:
        pass


def _fetcher(addresses: dict[str, list[str]], responses: list[FakeResponse]) -> tuple[Fetcher, list[str]]:
    connected: list[str] = []

    def resolver(host: str, port: int) -> list[str]:
        return addresses[host]

    def connect(target: Target, address: str) -> FakeConnection:
        connected.append(f"{target.host}@{address}")
        return FakeConnection(responses.pop(0))

    return Fetcher(POLICY, resolver=resolver, connect=connect), connected


@pytest.mark.parametrize(
    "addresses",
    [["10.0.0.5"], ["127.0.0.1"], ["169.254.169.254"], ["::1"], ["fe80::1"], [PUBLIC, "192.168.0.10"], []],
)
def test_a_host_that_resolves_to_any_private_address_is_never_connected(addresses: list[str], tmp_path: Path) -> None:
    fetcher, connected = _fetcher({"allowed.example": addresses}, [FakeResponse(200, body=b"x")])
    with pytest.raises(WorkloadError):
        fetcher.fetch("https://allowed.example/a.tif", tmp_path / "a.tif")
    assert connected == []
    assert not (tmp_path / "a.tif").exists()


def test_a_redirect_to_another_host_is_refused_before_connecting_there(tmp_path: Path) -> None:
    fetcher, connected = _fetcher(
        {"allowed.example": [PUBLIC], "tiles.data.example": [PUBLIC]},
        [FakeResponse(302, {"Location": "https://tiles.data.example/a.tif"}), FakeResponse(200, body=b"x")],
    )
    with pytest.raises(FetchRefused):
        fetcher.fetch("https://allowed.example/a.tif", tmp_path / "a.tif")
    assert connected == [f"allowed.example@{PUBLIC}"]
    assert not (tmp_path / "a.tif").exists()


def test_a_same_host_redirect_to_a_rebound_private_address_is_refused(tmp_path: Path) -> None:
    answers = iter([[PUBLIC], ["169.254.169.254"]])  # DNS rebinding between the two hops

    def resolver(host: str, port: int) -> list[str]:
        return next(answers)

    connected: list[str] = []
    responses = [FakeResponse(302, {"Location": "/next"}), FakeResponse(200, body=b"x")]

    def connect(target: Target, address: str) -> FakeConnection:
        connected.append(address)
        return FakeConnection(responses.pop(0))

    fetcher = Fetcher(POLICY, resolver=resolver, connect=connect)
    with pytest.raises(FetchRefused):
        fetcher.fetch("https://allowed.example/a.tif", tmp_path / "a.tif")
    assert connected == [PUBLIC]


def test_a_vetted_fetch_connects_to_the_vetted_address(tmp_path: Path) -> None:
    fetcher, connected = _fetcher({"allowed.example": [PUBLIC]}, [FakeResponse(200, {"Content-Length": "5"}, b"hello")])
    assert fetcher.fetch("https://allowed.example/a.tif", tmp_path / "a.tif") == 5
    assert connected == [f"allowed.example@{PUBLIC}"]
    assert (tmp_path / "a.tif").read_bytes() == b"hello"


def test_an_oversized_body_is_refused_and_leaves_no_file(tmp_path: Path) -> None:
    small = FetchPolicy(allowed_hosts=POLICY.allowed_hosts, max_bytes=4)
    responses = [FakeResponse(200, {"Content-Length": "3"}, b"too long")]
    fetcher = Fetcher(small, resolver=lambda h, p: [PUBLIC], connect=lambda t, a: FakeConnection(responses.pop(0)))
    with pytest.raises(FetchRefused):
        fetcher.fetch("https://allowed.example/a.tif", tmp_path / "a.tif")
    assert list(tmp_path.iterdir()) == []


def test_refusal_messages_do_not_echo_a_query_string_token() -> None:
    with pytest.raises(FetchRefused) as caught:
        check_url("https://evil.example/a.tif?sv=2024-11-04&sig=FAKEsig%2Bvalue", POLICY)
    assert "FAKEsig" not in str(caught.value)
