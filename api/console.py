"""The web console: static files and the settings a browser needs to call the API (docs/adr/0014).

The console is plain HTML, CSS and JavaScript modules in ``api/console_static/``
(shipped with the app, no build step). These routes are anonymous like the
OpenAPI document: the files hold no data, and every API call the console makes
is authenticated like any other client's (the development principal locally,
an Entra token from the browser's own sign-in in Azure).

Every answer carries a strict Content-Security-Policy (:mod:`api.console_policy`):
scripts and styles from this origin only, no inline code, images and JSON only
from here and the storage account that signs the outputs' read URLs.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path

import azure.functions as func

from api.console_policy import console_config, security_headers
from api.problems import problem
from hastegeo.settings.load import get_settings
from hastegeo.utils.errors import ConfigurationError

bp = func.Blueprint()  # type: ignore[no-untyped-call]

STATIC = Path(__file__).with_name("console_static")
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}


@lru_cache(maxsize=1)
def static_files() -> dict[str, tuple[bytes, str, str]]:
    """Every servable file by its path under ``console_static/``: (body, content type, ETag).

    Read once: the set of files is fixed when the app is deployed, and a request can
    only ever name one of these keys, so no path from a URL ever reaches the file system.
    The folder is flat: a file's name is one route segment.
    """
    files = {}
    for path in sorted(STATIC.iterdir()):
        if path.is_file() and path.suffix in CONTENT_TYPES:
            body = path.read_bytes()
            etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
            files[path.name] = (body, CONTENT_TYPES[path.suffix], etag)
    return files


def _origins() -> tuple[str, str]:
    """(storage blob origin, sign-in origin) for the policy; empty when the settings cannot be read."""
    try:
        settings = get_settings()
    except ConfigurationError:
        return "", ""
    config = console_config(settings)
    return config["storageOrigin"], config["auth"].get("origin", "")


# Methods the console answers; every other one is a 405 that still carries the policy.
READ_METHODS = ("GET", "HEAD")


@bp.route(route="console/{*path}", auth_level=func.AuthLevel.ANONYMOUS)
def console(req: func.HttpRequest) -> func.HttpResponse:
    """Every answer under ``/api/console``: the page, its files, its settings, and every refusal.

    One catch-all function for every method and path, so that the answers the host would
    otherwise give itself (404 for a deeper path, 405 for another method) come from here too and
    carry the Content-Security-Policy and ``nosniff`` like the rest. ``/api/console`` redirects
    to ``/api/console/`` so the page's relative links resolve.
    """
    headers = security_headers(*_origins())
    if req.method.upper() not in READ_METHODS:
        allowed = ", ".join(READ_METHODS)
        return _with(problem(405, "Method not allowed", f"The console answers {allowed}"), headers, Allow=allowed)
    name = req.route_params.get("path") or ""
    if not name:
        if not req.url.split("?", 1)[0].endswith("/"):
            return func.HttpResponse(
                status_code=308, headers={**headers, "Location": "/api/console/", "Cache-Control": "no-store"}
            )
        return _file(req, "index.html", headers)
    if name == "config.json":
        return _settings(headers)
    return _file(req, name, headers)


def _with(response: func.HttpResponse, headers: dict[str, str], **extra: str) -> func.HttpResponse:
    for key, value in {**headers, **extra}.items():
        response.headers[key] = value
    return response


def _settings(headers: dict[str, str]) -> func.HttpResponse:
    """What the browser needs to sign in and call the API: built from the app's settings, never a secret."""
    try:
        document = console_config(get_settings())
    except ConfigurationError as exc:
        return _with(problem(503, "The app is misconfigured", str(exc)), headers, **{"Cache-Control": "no-store"})
    # The policy names the origins this document names (the same settings, read once for both).
    headers = {
        **security_headers(document["storageOrigin"], document["auth"].get("origin", "")),
        "Cache-Control": "no-store",
    }
    return func.HttpResponse(json.dumps(document), status_code=200, mimetype="application/json", headers=headers)


def _file(req: func.HttpRequest, name: str, headers: dict[str, str]) -> func.HttpResponse:
    """One of the console's files (they sit in one folder, so a name is one path segment)."""
    found = static_files().get(name)
    if found is None:
        return _with(problem(404, "Not found", f"The console has no file {name[:200]!r}"), headers)
    body, content_type, etag = found
    headers = {
        **headers,
        # Revalidate every time: a deployment changes the files under the same names, and the ETag makes it cheap.
        "Cache-Control": "no-cache",
        "ETag": etag,
        "Content-Type": content_type,
    }
    if etag in (tag.strip() for tag in req.headers.get("If-None-Match", "").split(",")):
        return func.HttpResponse(status_code=304, headers=headers)
    return func.HttpResponse(body, status_code=200, headers=headers)
