"""Pure rules of the web console's answers: the settings document and the security headers.

No I/O: :mod:`api.console` reads the settings and the files; everything it
sends about origins and policies is decided here and unit-tested without a host.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from azure.storage.blob import BlobServiceClient

from hastegeo import __version__
from hastegeo.config import Settings, StorageSettings

LOGIN_ORIGIN = "https://login.microsoftonline.com"


def blob_origin(storage: StorageSettings) -> str:
    """The scheme://host[:port] the outputs' read URLs point at (Azurite locally, the account in Azure)."""
    if storage.connection_string:
        url = BlobServiceClient.from_connection_string(storage.connection_string).url  # parses only, no I/O
    else:
        url = f"https://{storage.account_name}.blob.core.windows.net"
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def console_config(settings: Settings) -> dict[str, Any]:
    """``GET /api/console/config.json``: where the API is and how the browser signs in.

    Without a client id (development) ``auth.mode`` is ``none``: the browser sends no token
    and the development host supplies the caller. With one, the console runs the OAuth 2.0
    authorization-code flow with PKCE against the tenant and asks for the API's own scope.
    """
    auth = settings.auth
    document: dict[str, Any] = {
        "apiBase": "/api",
        "version": __version__,
        "storageOrigin": blob_origin(settings.storage),
    }
    if not auth.client_id:
        document["auth"] = {"mode": "none"}
        return document
    tenant = auth.tenant_id or "organizations"
    document["auth"] = {
        "mode": "entra",
        "clientId": auth.client_id,
        "tenantId": tenant,
        "origin": LOGIN_ORIGIN,
        "authority": f"{LOGIN_ORIGIN}/{tenant}/oauth2/v2.0",
        # The delegated scope infra/scripts/app-registration.sh defines (a user signs in, not an app).
        "scope": f"api://{auth.client_id}/user_impersonation",
    }
    return document


def content_security_policy(storage_origin: str, login_origin: str) -> str:
    """No inline script or style, nothing from elsewhere but the outputs' storage and the sign-in endpoint.

    ``img-src`` needs the storage origin (quicklooks are ``<img>`` of read URLs), ``connect-src``
    too (the charts fetch small JSON outputs) and the sign-in origin (the token request).
    """
    extra_img = f" {storage_origin}" if storage_origin else ""
    extra_connect = "".join(f" {origin}" for origin in (storage_origin, login_origin) if origin)
    return "; ".join(
        [
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            f"img-src 'self'{extra_img}",
            f"connect-src 'self'{extra_connect}",
            "form-action 'self'",
            "base-uri 'none'",
            "frame-ancestors 'none'",
        ]
    )


def security_headers(storage_origin: str, login_origin: str) -> dict[str, str]:
    """Headers on every console answer: the policy, no sniffing, no framing, no referrer (codes and SAS stay put)."""
    return {
        "Content-Security-Policy": content_security_policy(storage_origin, login_origin),
        "X-Content-Type-Options": "nosniff",
        "X-Frame-Options": "DENY",
        "Referrer-Policy": "no-referrer",
    }
