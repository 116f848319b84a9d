"""Who is calling, and what they may do: the App Service principal, roles, projects and the decisions.

Everything here is pure (no settings lookups, no logging, no I/O), so each rule
is tested without fixtures; ``api/access.py`` is the only caller on the request
path and turns a :class:`Decision` into a response and a log line.

Identity comes from App Service authentication ("Easy Auth"): it validates the
caller's Entra ID token and passes the caller to the app as the
``X-MS-CLIENT-PRINCIPAL`` header, base64 of::

    {"auth_typ": "aad", "name_typ": "...", "role_typ": "...",
     "claims": [{"typ": "name", "val": "ana@contoso.com"}, {"typ": "roles", "val": "Haste.Submitter"}, ...]}

The header is trusted only in :attr:`AuthMode.APP_SERVICE` (the platform then
removes any copy a client sent). Roles are app roles; projects come from group
claims mapped by ``HASTE_PROJECT_GROUPS`` and from a ``haste_projects`` claim.

Errors:
    PrincipalError (ValueError): the header is missing or unreadable. Its message
        says why and never contains the header's value.
"""

from __future__ import annotations

import base64
import binascii
import enum
import json
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from hastegeo.models.ids import ID

PRINCIPAL_HEADER = "X-MS-CLIENT-PRINCIPAL"
MAX_HEADER_CHARS = 32 * 1024  # Easy Auth's principal for a user in many groups is a few KiB
MAX_CLAIMS = 1000
PROJECTS_CLAIM = "haste_projects"

# Claim types Easy Auth uses for the same thing (short names from Entra v2 tokens, long ones from v1).
NAME_CLAIMS = ("name", "preferred_username", "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/name")
OBJECT_ID_CLAIMS = ("http://schemas.microsoft.com/identity/claims/objectidentifier", "oid")
ROLE_CLAIMS = ("roles", "role", "http://schemas.microsoft.com/ws/2008/06/identity/claims/role")
GROUP_CLAIMS = ("groups", "http://schemas.microsoft.com/ws/2008/06/identity/claims/groups")

PROJECT_ID = ID  # as JobRequest.project_id; use with fullmatch
_MAX_NAME = 200


class AuthMode(enum.StrEnum):
    """Where the caller's identity comes from (``HASTE_AUTH_MODE``)."""

    APP_SERVICE = "app_service"  # the X-MS-CLIENT-PRINCIPAL header from App Service authentication
    NONE = "none"  # no identity: every caller is an admin (isolated development only)


class Role(enum.StrEnum):
    """App roles, each including the one before: a submitter reads, an admin does everything everywhere."""

    READER = "Haste.Reader"
    SUBMITTER = "Haste.Submitter"
    ADMIN = "Haste.Admin"


class PrincipalError(ValueError):
    """The principal header is missing or cannot be read (the message never quotes the header)."""


@dataclass(frozen=True)
class Principal:
    """The caller: a display name, the Entra object id, app roles and the projects they belong to."""

    name: str
    object_id: str = ""
    roles: frozenset[Role] = frozenset()
    projects: frozenset[str] = frozenset()
    auth_type: str = "aad"

    @property
    def is_admin(self) -> bool:
        return Role.ADMIN in self.roles

    def describe(self) -> str:
        """``name (oid …)`` for log lines: who, never how they proved it."""
        return f"{self.name} (oid {self.object_id})" if self.object_id else self.name


# The caller in HASTE_AUTH_MODE=none: no identity at all, so nothing can be narrowed.
UNAUTHENTICATED_ADMIN = Principal(name="anonymous (HASTE_AUTH_MODE=none)", roles=frozenset(Role), auth_type="none")


# --------------------------------------------------------------------------- parsing


def parse_principal(header: str | None, project_groups: Mapping[str, str] | None = None) -> Principal:
    """The :class:`Principal` in an ``X-MS-CLIENT-PRINCIPAL`` value.

    ``project_groups`` maps group object ids to project ids (``HASTE_PROJECT_GROUPS``).
    Unknown roles and unmapped groups are ignored.

    Raises:
        PrincipalError: the header is absent, too long, not base64, not JSON, or not a principal.
    """
    if not header or not header.strip():
        raise PrincipalError("no X-MS-CLIENT-PRINCIPAL header")
    if len(header) > MAX_HEADER_CHARS:
        raise PrincipalError(f"X-MS-CLIENT-PRINCIPAL is longer than {MAX_HEADER_CHARS} characters")
    text = header.strip()
    try:
        raw = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise PrincipalError("X-MS-CLIENT-PRINCIPAL is not base64") from None
    try:
        document = json.loads(raw.decode("utf-8"))
    except RecursionError:  # a few KiB of brackets is deeper than the parser goes: a 401, not a 500
        raise PrincipalError("X-MS-CLIENT-PRINCIPAL is nested too deeply") from None
    except (UnicodeDecodeError, ValueError):
        raise PrincipalError("X-MS-CLIENT-PRINCIPAL is not JSON") from None
    return principal_from_document(document, project_groups or {})


def principal_from_document(document: Any, project_groups: Mapping[str, str]) -> Principal:
    """The principal in a decoded header (see :func:`parse_principal`). Raises PrincipalError."""
    if not isinstance(document, dict):
        raise PrincipalError("X-MS-CLIENT-PRINCIPAL is not a JSON object")
    claims_in = document.get("claims")
    if not isinstance(claims_in, list) or len(claims_in) > MAX_CLAIMS:
        raise PrincipalError(f"X-MS-CLIENT-PRINCIPAL has no claims list (or more than {MAX_CLAIMS} claims)")
    claims: list[tuple[str, str]] = []
    for claim in claims_in:
        if (
            not isinstance(claim, dict)
            or not isinstance(claim.get("typ"), str)
            or not isinstance(claim.get("val"), str)
        ):
            raise PrincipalError("X-MS-CLIENT-PRINCIPAL has a claim that is not {typ, val} strings")
        claims.append((claim["typ"], claim["val"]))
    name_types = _types(document.get("name_typ"), NAME_CLAIMS)
    role_types = _types(document.get("role_typ"), ROLE_CLAIMS)
    name = _first(claims, name_types)
    object_id = _first(claims, OBJECT_ID_CLAIMS)
    if not name and not object_id:
        raise PrincipalError("X-MS-CLIENT-PRINCIPAL names nobody (no name or object id claim)")
    roles = roles_from(val for typ, val in claims if typ in role_types)
    groups = [val for typ, val in claims if typ in GROUP_CLAIMS]
    named = [project for typ, val in claims if typ == PROJECTS_CLAIM for project in split_csv(val)]
    auth_type = document.get("auth_typ")
    return Principal(
        name=clean_name(name or object_id),
        object_id=clean_name(object_id),
        roles=roles,
        projects=projects_of(groups, project_groups) | frozenset(p for p in named if PROJECT_ID.fullmatch(p)),
        auth_type=clean_name(auth_type) if isinstance(auth_type, str) and auth_type else "aad",
    )


def roles_from(values: Iterable[str]) -> frozenset[Role]:
    """The known app roles among claim values (unknown roles are someone else's: ignored)."""
    known = {role.value: role for role in Role}
    return frozenset(known[value.strip()] for value in values if value.strip() in known)


def projects_of(groups: Iterable[str], project_groups: Mapping[str, str]) -> frozenset[str]:
    """Projects the caller's groups map to (group object ids compare case-insensitively)."""
    mapping = {group.strip().lower(): project for group, project in project_groups.items()}
    return frozenset(mapping[group.strip().lower()] for group in groups if group.strip().lower() in mapping)


def _types(declared: Any, defaults: tuple[str, ...]) -> tuple[str, ...]:
    return (declared, *defaults) if isinstance(declared, str) and declared else defaults


def _first(claims: list[tuple[str, str]], types: tuple[str, ...]) -> str:
    for wanted in types:
        for typ, val in claims:
            if typ == wanted and val.strip():
                return val.strip()
    return ""


def clean_name(text: str) -> str:
    """A claim value fit for a log line: no control characters (no forged log lines), bounded."""
    return "".join(ch if unicodedata.category(ch)[0] != "C" else "?" for ch in text)[:_MAX_NAME]


def split_csv(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def encode_principal(principal: Principal) -> str:
    """An ``X-MS-CLIENT-PRINCIPAL`` value for ``principal``, as App Service would send it.

    Used by the development host (to inject its configured identity) and by tests.
    Projects travel in the ``haste_projects`` claim.
    """
    claims = [{"typ": "name", "val": principal.name}]
    if principal.object_id:
        claims.append({"typ": OBJECT_ID_CLAIMS[0], "val": principal.object_id})
    claims += [{"typ": "roles", "val": role.value} for role in sorted(principal.roles)]
    if principal.projects:
        claims.append({"typ": PROJECTS_CLAIM, "val": ",".join(sorted(principal.projects))})
    document = {"auth_typ": principal.auth_type, "name_typ": "name", "role_typ": "roles", "claims": claims}
    return base64.b64encode(json.dumps(document).encode()).decode("ascii")


# --------------------------------------------------------------------------- decisions


@dataclass(frozen=True)
class Decision:
    """An answer with its reason (for the log). ``conceal``: answer as if the job did not exist."""

    allowed: bool
    reason: str = ""
    conceal: bool = field(default=False)

    def __bool__(self) -> bool:
        return self.allowed


ALLOWED = Decision(True)


def is_member(principal: Principal, project: str) -> bool:
    """An admin belongs to every project; anyone else to the projects their claims name."""
    return principal.is_admin or project in principal.projects


def can_read(principal: Principal, project: str) -> Decision:
    """List and read the jobs of ``project``: any role, and membership."""
    if not principal.roles:
        return Decision(False, "the caller has no Haste role")
    if not is_member(principal, project):
        return Decision(False, f"the caller is not a member of project {project}")
    return ALLOWED


def can_submit(principal: Principal, project: str) -> Decision:
    """Submit a job to ``project``: submitter (or admin), and membership."""
    if not principal.roles & {Role.SUBMITTER, Role.ADMIN}:
        return Decision(False, f"role {_best(principal)} cannot submit or cancel jobs")
    if not is_member(principal, project):
        return Decision(False, f"the caller is not a member of project {project}")
    return ALLOWED


def can_cancel(principal: Principal, project: str) -> Decision:
    """Cancel a job of ``project``: the same rule as submitting."""
    return can_submit(principal, project)


def can_list_backends(principal: Principal) -> Decision:
    """See the backends and their workloads: any role (they belong to no project)."""
    return ALLOWED if principal.roles else Decision(False, "the caller has no Haste role")


def job_access(principal: Principal, project: str, action: Literal["read", "cancel", "retry"]) -> Decision:
    """For a job the caller named by id, of ``project``.

    A job the caller cannot read is concealed (answered like a missing job, so its
    existence does not leak); one they can read but not cancel (or retry: a submission
    to the job's project) is refused openly.
    """
    read = can_read(principal, project)
    if not read:
        return replace(read, conceal=True)
    if action == "read":
        return read
    return can_cancel(principal, project) if action == "cancel" else can_submit(principal, project)


def _best(principal: Principal) -> str:
    return max(principal.roles, key=list(Role).index).value if principal.roles else "(none)"
