"""CORS decisions for the development host, pure so they are tested without a server.

In Azure, CORS is answered by the App Service platform in front of the
Functions host, not by function code: an allowed origin gets its preflight
answered and ``Access-Control-Allow-Origin`` added to responses; any other
origin gets no CORS headers at all (the browser then blocks the call). The
development host reproduces that, so a browser front end behaves locally the
way it will in Azure. No origin is allowed unless configured.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


def _normalise(origin: str) -> str:
    return origin.strip().rstrip("/").lower()


def is_preflight(method: str, origin: str | None, requested_method: str | None) -> bool:
    """A CORS preflight is an OPTIONS request carrying Origin and Access-Control-Request-Method."""
    return method.upper() == "OPTIONS" and bool(origin) and bool(requested_method)


@dataclass(frozen=True)
class CorsPolicy:
    """Allowed origins (exact, case-insensitive; ``"*"`` allows any) and the preflight cache lifetime."""

    allowed_origins: tuple[str, ...] = ()
    max_age_seconds: int = 3600

    @classmethod
    def from_origins(cls, origins: Iterable[str] | None, max_age_seconds: int = 3600) -> CorsPolicy:
        return cls(tuple(_normalise(o) for o in origins or () if o.strip()), max_age_seconds)

    def allows(self, origin: str | None) -> bool:
        if not origin:
            return False
        return "*" in self.allowed_origins or _normalise(origin) in self.allowed_origins

    def preflight_headers(
        self, origin: str | None, requested_method: str, requested_headers: str | None
    ) -> dict[str, str] | None:
        """Headers for a 204 preflight answer, or None when the origin is not allowed."""
        if origin is None or not self.allows(origin):
            return None
        headers = {
            "Access-Control-Allow-Origin": origin,
            "Access-Control-Allow-Methods": requested_method.upper(),
            "Access-Control-Max-Age": str(self.max_age_seconds),
            "Vary": "Origin",
        }
        if requested_headers:
            headers["Access-Control-Allow-Headers"] = requested_headers
        return headers

    def response_headers(self, origin: str | None) -> dict[str, str]:
        """Headers to add to an ordinary response (empty when the origin is absent or not allowed)."""
        if origin is None or not self.allows(origin):
            return {}
        return {"Access-Control-Allow-Origin": origin, "Vary": "Origin"}
