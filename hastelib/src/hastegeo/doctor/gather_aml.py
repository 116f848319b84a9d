"""Look up the Azure ML workspace, compute targets, datastores and Environment the settings name.

Through the :data:`~hastegeo.compute.azure_ml.client.ClientFactory` the backend itself uses
(the SDK is imported by that factory only), with the backend's retry budget.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from hastegeo.compute.azure_ml.client import MLClientLike
from hastegeo.compute.azure_ml.errors import aml_calls
from hastegeo.compute.azure_ml.settings import AmlSettings, EnvironmentSource, parse_environment_reference
from hastegeo.compute.retry import ErrorKind, Failed
from hastegeo.doctor.facts import Lookup

HINTS = {"workspace": "AML_WORKSPACE", "compute": "AML_COMPUTE", "datastore": "AML_DATASTORES"}


def lookups(settings: AmlSettings, client: MLClientLike, containers: tuple[str, str]) -> list[Lookup]:
    """Workspace, each compute target, the datastore of each container jobs mount, the registered Environment."""
    calls = aml_calls(settings.retry_attempts, settings.retry_delay_s)
    name, version, label = parse_environment_reference(settings.environment)
    wanted: list[tuple[str, str, Callable[[], object]]] = [
        ("workspace", settings.workspace, lambda: client.workspaces.get(settings.workspace)),
        *[
            ("compute", target, partial(client.compute.get, target))
            for target in sorted(set(settings.compute.values()))
        ],
        *[
            (
                "datastore",
                settings.datastore_for(container),
                partial(client.datastores.get, settings.datastore_for(container)),
            )
            for container in containers
        ],
    ]
    if settings.environment_source is EnvironmentSource.REGISTERED:
        wanted.append(
            ("environment", settings.environment, lambda: client.environments.get(name, version=version, label=label))
        )
    found = []
    for kind, target, lookup in wanted:
        got = calls.attempt(lookup, what=f"get {kind} {target}", hint=HINTS.get(kind, "AML_ENVIRONMENT"))
        if isinstance(got, Failed):
            found.append(Lookup(kind, target, False, None if got.kind is ErrorKind.NOT_FOUND else str(got.error)))
        else:
            found.append(Lookup(kind, target, True, extra=_extra(kind, got)))
    return found


def _extra(kind: str, entity: object) -> dict[str, str]:
    """What the quota and identity checks need: a cluster's size, scale, tier and identities; the region."""
    if kind == "workspace":
        return {"location": str(getattr(entity, "location", "") or "")}
    if kind != "compute" or not getattr(entity, "size", None):
        return {}
    identity = getattr(entity, "identity", None)
    principals = [str(getattr(identity, "principal_id", "") or "")] if identity is not None else []
    unresolved = []
    for item in getattr(identity, "user_assigned_identities", None) or ():
        # azure-ai-ml keeps a user-assigned identity's principal id under its wire name
        principal = getattr(item, "principal_id", None) or getattr(item, "principalId", None)
        if principal:
            principals.append(str(principal))
        elif getattr(item, "resource_id", None):
            unresolved.append(str(item.resource_id))
    return {
        "size": str(entity.size),  # type: ignore[attr-defined]
        "max_nodes": str(getattr(entity, "max_instances", 0) or 0),
        "tier": str(getattr(entity, "tier", "") or "dedicated"),
        "principals": ",".join(p for p in principals if p),
        "identities": ",".join(unresolved),  # user-assigned identities named by resource id only
    }
