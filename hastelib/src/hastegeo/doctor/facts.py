"""Plain facts the gatherers read from Azure and the checks judge: no SDK type crosses this line."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Unreadable:
    """A read that failed (403, 404, a network error): ``reason`` says which, in one line."""

    reason: str
    status: int | None = None


@dataclass(frozen=True)
class Assignment:
    principal_id: str
    role_id: str  # the role definition's GUID (the last segment of roleDefinitionId)
    scope: str


@dataclass(frozen=True)
class Site:
    name: str
    principal_id: str | None
    host_name: str
    location: str
    settings: dict[str, str]


@dataclass(frozen=True)
class BatchAccount:
    name: str
    location: str
    dedicated_core_quota: int
    low_priority_core_quota: int
    per_family: dict[str, int]
    per_family_enforced: bool
    pool_quota: int


@dataclass(frozen=True)
class Pool:
    name: str
    vm_size: str
    allocation_state: str
    formula: str | None  # autoscale formula, None for fixed scale
    fixed_dedicated: int
    fixed_low_priority: int
    resize_errors: tuple[tuple[str, str], ...]  # (code, message)
    autoscale_error: tuple[str, str] | None


@dataclass(frozen=True)
class VmSku:
    name: str
    family: str
    vcpus: int


@dataclass(frozen=True)
class AuthSettings:
    enabled: bool
    require_authentication: bool
    unauthenticated_action: str
    aad_enabled: bool
    client_id: str
    allowed_audiences: tuple[str, ...]


@dataclass(frozen=True)
class AppRegistration:
    app_id: str
    identifier_uris: tuple[str, ...]
    spa_redirect_uris: tuple[str, ...]
    scopes: dict[str, bool]  # value -> isEnabled
    app_roles: dict[str, str]  # id -> value, enabled roles only
    group_membership_claims: str | None


@dataclass(frozen=True)
class RoleGrant:
    principal_id: str
    principal_type: str
    app_role_id: str


@dataclass(frozen=True)
class Telemetry:
    records: int
    last: str | None


@dataclass(frozen=True)
class Lookup:
    """An Azure ML asset looked up by name: found, missing (404) or unreadable."""

    kind: str
    name: str
    found: bool
    problem: str | None = None
    extra: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class AmlVmSize:
    """A VM size Azure ML offers in a region, with the quota family it counts against."""

    name: str
    family: str
    vcpus: int


@dataclass(frozen=True)
class AmlUsage:
    """One line of Azure ML's usages for a region (subscription level): what is used of a limit.

    ``scope`` is the usage's kind as Azure ML types it: ``vmFamily``, ``dedicatedCores``,
    ``lowPriorityCores`` or ``totalCores``; ``limit`` -1 means no limit of its own.
    """

    scope: str
    name: str
    key: str  # the family part of the usage id, lower case, without '_' (see family_key)
    tier: str  # "dedicated", "lowpriority" or "" for the totals of clusters
    current: int
    limit: int


def family_key(name: str) -> str:
    """``standardNCASv3_T4Family`` and ``Standard_NCASv3_T4_Family`` → ``standardncasv3t4family``."""
    return name.replace("_", "").lower()
