"""The development host's caller: a ``HASTE_DEV_PRINCIPAL`` value made a principal (development only)."""

from __future__ import annotations

import uuid

from hastegeo.auth import PROJECT_ID, Principal, Role, clean_name, split_csv

_ROLE_ALIASES = {"reader": Role.READER, "submitter": Role.SUBMITTER, "admin": Role.ADMIN}


def parse_dev_principal(text: str) -> Principal:
    """The principal a ``HASTE_DEV_PRINCIPAL`` value describes.

    Format: ``name=dev@example.com;roles=Haste.Admin;projects=demo,p1`` (``oid=`` optional;
    roles may be written ``reader``/``submitter``/``admin``). Without ``oid`` the object id
    is derived from the name, so the same name is always the same caller.

    Raises:
        ValueError: an unknown key or role, a bad project id, or no name.
    """
    fields: dict[str, str] = {}
    for part in text.split(";"):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        key = key.strip().lower()
        if not sep or key not in ("name", "oid", "roles", "projects"):
            raise ValueError(f"expected name=…;roles=…;projects=…[;oid=…], got {part.strip()!r}")
        fields[key] = value.strip()
    name = fields.get("name", "")
    if not name:
        raise ValueError("a development principal needs name=…")
    roles: set[Role] = set()
    for value in split_csv(fields.get("roles", "")):
        role = _ROLE_ALIASES.get(value.lower()) or next((r for r in Role if r.value == value), None)
        if role is None:
            raise ValueError(f"unknown role {value!r}; choose from {', '.join(r.value for r in Role)}")
        roles.add(role)
    projects = split_csv(fields.get("projects", ""))
    bad = [project for project in projects if not PROJECT_ID.fullmatch(project)]
    if bad:
        raise ValueError(f"not project ids: {bad}")
    return Principal(
        name=clean_name(name),
        object_id=fields.get("oid") or str(uuid.uuid5(uuid.NAMESPACE_URL, f"haste-dev:{name}")),
        roles=frozenset(roles),
        projects=frozenset(projects),
        auth_type="dev",
    )
