"""Storage clients read the proxy and CA-bundle environment once, not on every call (pure part)."""

from __future__ import annotations

from typing import Any

from hastegeo.utils.transport import DirectSession, names_proxy, transport_options


def _plain(options: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in options.items() if name != "session"}


def test_without_a_proxy_the_environment_is_not_walked_per_call() -> None:
    options = transport_options({"PATH": "/usr/bin", "HASTE_AUTH_MODE": "none"})
    assert _plain(options) == {"use_env_settings": False, "session_owner": True}
    assert isinstance(options["session"], DirectSession)
    assert options["session"].trust_env is False
    assert not options["session"]._merges_something()


def test_each_client_gets_a_session_of_its_own() -> None:
    """A client closes the session it owns: two clients sharing one would close each other's."""
    assert transport_options({})["session"] is not transport_options({})["session"]


def test_a_ca_bundle_is_passed_on_as_requests_would_have_used_it() -> None:
    both = {"REQUESTS_CA_BUNDLE": "/etc/a.pem", "CURL_CA_BUNDLE": "/etc/b.pem"}
    assert _plain(transport_options(both)) == {
        "use_env_settings": False,
        "session_owner": True,
        "connection_verify": "/etc/a.pem",
    }
    assert transport_options({"CURL_CA_BUNDLE": "/etc/b.pem"})["connection_verify"] == "/etc/b.pem"
    assert "connection_verify" not in transport_options({"REQUESTS_CA_BUNDLE": ""})


def test_any_proxy_variable_keeps_the_per_call_environment() -> None:
    for name in ("HTTPS_PROXY", "http_proxy", "ALL_PROXY", "no_proxy"):
        assert names_proxy({name: "http://proxy:3128"})
        assert transport_options({name: "http://proxy:3128", "REQUESTS_CA_BUNDLE": "/x.pem"}) == {}
    assert not names_proxy({"HTTPS_PROXY": ""})
    assert not names_proxy({"PROXY_HOST": "x"})


def test_a_session_given_settings_of_its_own_merges_them_again() -> None:
    """Whoever sets cookies, auth, proxies or hooks on the session gets them, through requests' whole path."""
    for change in (
        lambda s: s.cookies.set("a", "b"),
        lambda s: setattr(s, "auth", ("user", "secret")),
        lambda s: s.proxies.update({"https": "http://proxy:3128"}),
        lambda s: s.hooks["response"].append(print),
        lambda s: setattr(s, "trust_env", True),
    ):
        session = DirectSession()
        change(session)
        assert session._merges_something()
