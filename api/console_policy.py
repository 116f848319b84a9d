"""Pure rules of the web console's answers: the settings document and the security headers.

No I/O: :mod:`api.console` reads the settings and the files; everything it
sends about origins and policies is decided here and unit-tested without a host.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from azure.storage.blob import BlobServiceClient

from hastegeo import __version__
from hastegeo.settings.app import Settings, StorageSettings

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


def _files(description: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    problem = {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
    responses: dict[str, Any] = {
        "200": {
            "description": description,
            "content": {media: {"schema": {"type": "string"}} for media in FILE_MEDIA_TYPES},
        },
        "304": {"description": "Not modified since the ETag sent in If-None-Match"},
        **(extra or {}),
    }
    if "404" not in responses:
        responses["404"] = {"description": "No such file", "content": problem}
    return responses


# What the console's file routes answer 200 with (api/console.py's CONTENT_TYPES, without parameters).
FILE_MEDIA_TYPES = ("text/html", "text/javascript", "text/css", "image/svg+xml", "image/png")


def openapi_paths() -> dict[str, Any]:
    """The console's routes in the OpenAPI document: anonymous, outside the API proper, documented all the same
    (every route the app serves is in the document, and the fuzz suite holds each to it)."""
    config_schema = {
        "title": "ConsoleConfig",
        "type": "object",
        "required": ["apiBase", "version", "storageOrigin", "auth"],
        "additionalProperties": False,
        "properties": {
            "apiBase": {"type": "string"},
            "version": {"type": "string"},
            "storageOrigin": {"type": "string", "description": "Origin of the outputs' read URLs"},
            "auth": {
                "title": "ConsoleAuth",
                "type": "object",
                "required": ["mode"],
                "properties": {
                    "mode": {"enum": ["none", "entra"]},
                    "clientId": {"type": "string"},
                    "tenantId": {"type": "string"},
                    "origin": {"type": "string"},
                    "authority": {"type": "string"},
                    "scope": {"type": "string"},
                },
            },
        },
    }
    problem = {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
    tags = ["console"]
    return {
        "/console": {
            "get": {
                "operationId": "consoleIndex",
                "tags": tags,
                "summary": "The web console's page (docs/adr/0014)",
                "security": [],
                "responses": _files(
                    "The console's HTML page",
                    {
                        "308": {
                            "description": "Asked without the trailing slash: go to /api/console/",
                            "headers": {"Location": {"required": True, "schema": {"const": "/api/console/"}}},
                        }
                    },
                ),
            }
        },
        "/console/config.json": {
            "get": {
                "operationId": "consoleConfig",
                "tags": tags,
                "summary": "Where the API is and how a browser signs in, from the app's settings",
                "security": [],
                "responses": {
                    "200": {"description": "The settings", "content": {"application/json": {"schema": config_schema}}},
                    "503": {"description": "The app's settings are invalid", "content": problem},
                },
            }
        },
        "/console/{name}": {
            "get": {
                "operationId": "consoleFile",
                "tags": tags,
                "summary": "One of the web console's files",
                "security": [],
                "parameters": [
                    {
                        "name": "name",
                        "in": "path",
                        "required": True,
                        "description": "A file of the console (any other name is a 404)",
                        "schema": {"type": "string", "pattern": "^[a-z]+[.](html|js|css|svg|png)$", "maxLength": 64},
                    }
                ],
                "responses": _files("The file"),
            }
        },
    }
