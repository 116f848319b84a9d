"""The console's settings document and security headers, from settings alone (no host, no storage)."""

from __future__ import annotations

import re

import pytest

from api.console import CONTENT_TYPES, static_files
from api.console_policy import blob_origin, console_config, content_security_policy, security_headers
from hastegeo.settings.load import load_settings
from hastegeo.utils.errors import ConfigurationError

AZURITE = (
    "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5;"
    "BlobEndpoint=http://127.0.0.1:10123/devstoreaccount1;QueueEndpoint=http://127.0.0.1:10124/devstoreaccount1;"
)
# Markup from strings, code from strings, tokens kept across reloads: none of it in the console.
_FORBIDDEN = [
    re.compile(pattern)
    for pattern in (
        r"\.innerHTML\s*=",
        r"\.outerHTML\s*=",
        r"insertAdjacentHTML\(",
        r"document\.write",
        r"\beval\(",
        r"new Function\(",
        r"localStorage\.",
        r"setAttribute\(\s*[\"']style",
    )
]
CLIENT = "11111111-2222-3333-4444-555555555555"


def test_development_has_no_sign_in_and_names_azurite() -> None:
    config = console_config(load_settings({"AzureWebJobsStorage": AZURITE}))
    assert config["auth"] == {"mode": "none"}
    assert config["storageOrigin"] == "http://127.0.0.1:10123"
    assert config["apiBase"] == "/api"


def test_azure_signs_in_with_the_app_registration_and_asks_for_the_api_scope() -> None:
    settings = load_settings(
        {
            "AzureWebJobsStorage__accountName": "hastest",
            "HASTE_AUTH_CLIENT_ID": CLIENT,
            "HASTE_AUTH_TENANT_ID": "contoso.onmicrosoft.com",
        }
    )
    config = console_config(settings)
    assert config["storageOrigin"] == "https://hastest.blob.core.windows.net"
    assert config["auth"] == {
        "mode": "entra",
        "clientId": CLIENT,
        "tenantId": "contoso.onmicrosoft.com",
        "origin": "https://login.microsoftonline.com",
        "authority": "https://login.microsoftonline.com/contoso.onmicrosoft.com/oauth2/v2.0",
        "scope": f"api://{CLIENT}/user_impersonation",
    }
    assert "secret" not in str(config).lower()
    assert "key" not in str(config).lower()


@pytest.mark.parametrize(("name", "value"), [("HASTE_AUTH_CLIENT_ID", "not-a-guid"), ("HASTE_AUTH_TENANT_ID", "a/b")])
def test_a_malformed_sign_in_setting_is_refused_by_name(name: str, value: str) -> None:
    with pytest.raises(ConfigurationError, match=name):
        load_settings({"AzureWebJobsStorage": AZURITE, name: value})


def test_blob_origin_keeps_the_port_and_drops_the_account_path() -> None:
    assert blob_origin(load_settings({"AzureWebJobsStorage": AZURITE}).storage) == "http://127.0.0.1:10123"


def test_policy_allows_nothing_inline_and_only_the_named_origins() -> None:
    policy = content_security_policy("https://acct.blob.core.windows.net", "https://login.microsoftonline.com")
    directives = dict(part.split(" ", 1) for part in policy.split("; "))
    assert directives["default-src"] == "'none'"
    assert directives["script-src"] == "'self'"
    assert directives["style-src"] == "'self'"
    assert directives["img-src"] == "'self' https://acct.blob.core.windows.net"
    assert directives["connect-src"] == "'self' https://acct.blob.core.windows.net https://login.microsoftonline.com"
    assert directives["frame-ancestors"] == "'none'"
    assert "unsafe" not in policy
    assert content_security_policy("", "").count("'self'") == 5  # nothing else when the origins are unknown


def test_headers_forbid_sniffing_framing_and_referrers() -> None:
    headers = security_headers("", "")
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["X-Frame-Options"] == "DENY"
    assert headers["Referrer-Policy"] == "no-referrer"


# Microsoft's MSAL.js, vendored unchanged from the npm package package.json pins (npm run vendor:msal).
VENDORED = {"msal.js": "node_modules/@azure/msal-browser/lib/msal-browser.min.js"}


def test_the_vendored_sign_in_library_is_microsofts_as_pinned() -> None:
    import json
    from pathlib import Path

    repo = Path(__file__).resolve().parents[3]
    pinned = json.loads((repo / "package.json").read_text(encoding="utf-8"))["dependencies"]["@azure/msal-browser"]
    for name, source in VENDORED.items():
        body = static_files()[name][0]
        assert body.startswith(f"/*! @azure/msal-browser v{pinned} ".encode()), f"{name} is not v{pinned}"
        installed = repo / source
        if installed.exists():  # after `make install`
            assert body == installed.read_bytes(), f"{name} differs from {source}: npm run vendor:msal"
    auth = (repo / "api" / "console_static" / "auth.js").read_text(encoding="utf-8")
    assert "BrowserCacheLocation.SessionStorage" in auth, "MSAL's cache stays in the tab"
    assert "LocalStorage" not in auth


def test_every_shipped_file_is_served_and_none_uses_inline_code_or_html_insertion() -> None:
    files = static_files()
    assert {"index.html", "app.js", "console.css"} <= set(files)
    for name, (body, content_type, etag) in files.items():
        assert content_type == CONTENT_TYPES["." + name.rsplit(".", 1)[1]]
        assert re.fullmatch(r'"[0-9a-f]{32}"', etag)
        if name in VENDORED:
            continue  # Microsoft's code, checked as theirs above; its storage is chosen by auth.js
        text = body.decode()
        for forbidden in _FORBIDDEN:
            assert not forbidden.search(text), (name, forbidden.pattern)
        if name.endswith(".html"):
            for inline in ("style=", "<style", "<script>", "javascript:"):
                assert inline not in text, (name, inline)
            assert not re.search(r"\son[a-z]+=", text), name


def test_the_document_describes_every_shipped_file_and_its_media_type() -> None:
    from api.console_policy import FILE_MEDIA_TYPES, openapi_paths

    (parameter,) = openapi_paths()["/console/{name}"]["get"]["parameters"]
    pattern = re.compile(parameter["schema"]["pattern"])
    for name, (_, content_type, _) in static_files().items():
        assert pattern.fullmatch(name), name
        assert content_type.split(";")[0] in FILE_MEDIA_TYPES, name
