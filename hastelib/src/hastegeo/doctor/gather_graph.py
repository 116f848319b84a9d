"""Read the API's app registration and who holds its roles from Microsoft Graph.

Plain azure-core: a ``PipelineClient`` with a bearer-token policy for Graph's scope (the
Graph SDK would add a large dependency for three GETs). ``transport=`` reaches the client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hastegeo.doctor.facts import AppRegistration, RoleGrant, Unreadable
from hastegeo.doctor.gather_arm import unreadable

if TYPE_CHECKING:
    from azure.core.credentials import TokenCredential

GRAPH = "https://graph.microsoft.com/v1.0"
SCOPE = "https://graph.microsoft.com/.default"


class Graph:
    def __init__(self, credential: TokenCredential, *, transport: Any = None) -> None:
        from azure.core import PipelineClient
        from azure.core.pipeline.policies import (
            BearerTokenCredentialPolicy,
            HeadersPolicy,
            RetryPolicy,
            UserAgentPolicy,
        )

        policies = [
            HeadersPolicy({"Accept": "application/json"}),
            UserAgentPolicy("haste-doctor"),
            RetryPolicy(),
            BearerTokenCredentialPolicy(credential, SCOPE),
        ]
        kwargs = {"transport": transport} if transport is not None else {}
        self._client = PipelineClient(GRAPH, policies=policies, **kwargs)

    def _get(self, path: str) -> Any:
        from azure.core.exceptions import HttpResponseError, ResourceNotFoundError
        from azure.core.rest import HttpRequest

        response = self._client.send_request(HttpRequest("GET", GRAPH + path))
        if response.status_code == 404:
            raise ResourceNotFoundError(response=response)
        if response.status_code != 200:
            raise HttpResponseError(response=response)
        return response.json()

    def application(self, app_id: str) -> AppRegistration | Unreadable:
        from azure.core.exceptions import AzureError

        try:
            app = self._get(f"/applications(appId='{app_id}')")
        except AzureError as exc:
            return unreadable(exc)
        api = app.get("api") or {}
        return AppRegistration(
            app_id=str(app.get("appId", app_id)),
            identifier_uris=tuple(app.get("identifierUris") or ()),
            spa_redirect_uris=tuple((app.get("spa") or {}).get("redirectUris") or ()),
            scopes={str(s.get("value")): bool(s.get("isEnabled")) for s in api.get("oauth2PermissionScopes") or ()},
            app_roles={str(r.get("id")): str(r.get("value")) for r in app.get("appRoles") or () if r.get("isEnabled")},
            group_membership_claims=app.get("groupMembershipClaims"),
        )

    def role_grants(self, app_id: str) -> list[RoleGrant] | Unreadable:
        """Who is assigned an app role on the app's service principal (users, groups, service principals)."""
        from azure.core.exceptions import AzureError

        try:
            principal = self._get(f"/servicePrincipals(appId='{app_id}')")
            grants: list[RoleGrant] = []
            path: str | None = f"/servicePrincipals/{principal['id']}/appRoleAssignedTo"
            while path:
                page = self._get(path)
                grants.extend(
                    RoleGrant(str(g.get("principalId")), str(g.get("principalType")), str(g.get("appRoleId")))
                    for g in page.get("value") or ()
                )
                link = page.get("@odata.nextLink")
                path = link[len(GRAPH) :] if isinstance(link, str) and link.startswith(GRAPH) else None
        except AzureError as exc:
            return unreadable(exc)
        return grants
