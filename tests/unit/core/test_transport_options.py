"""Storage clients read the proxy and CA-bundle environment once, not on every call (pure part)."""

from __future__ import annotations

from hastegeo.utils.transport import names_proxy, transport_options


def test_without_a_proxy_the_environment_is_not_walked_per_call() -> None:
    assert transport_options({"PATH": "/usr/bin", "HASTE_AUTH_MODE": "none"}) == {"use_env_settings": False}


def test_a_ca_bundle_is_passed_on_as_requests_would_have_used_it() -> None:
    both = {"REQUESTS_CA_BUNDLE": "/etc/a.pem", "CURL_CA_BUNDLE": "/etc/b.pem"}
    assert transport_options(both) == {"use_env_settings": False, "connection_verify": "/etc/a.pem"}
    assert transport_options({"CURL_CA_BUNDLE": "/etc/b.pem"})["connection_verify"] == "/etc/b.pem"
    assert "connection_verify" not in transport_options({"REQUESTS_CA_BUNDLE": ""})


def test_any_proxy_variable_keeps_the_per_call_environment() -> None:
    for name in ("HTTPS_PROXY", "http_proxy", "ALL_PROXY", "no_proxy"):
        assert names_proxy({name: "http://proxy:3128"})
        assert transport_options({name: "http://proxy:3128", "REQUESTS_CA_BUNDLE": "/x.pem"}) == {}
    assert not names_proxy({"HTTPS_PROXY": ""})
    assert not names_proxy({"PROXY_HOST": "x"})
