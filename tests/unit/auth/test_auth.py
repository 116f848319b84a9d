"""The access rules of hastegeo.auth: parsing the App Service principal, roles, projects and each decision."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from hastegeo.auth import (
    MAX_HEADER_CHARS,
    UNAUTHENTICATED_ADMIN,
    Principal,
    PrincipalError,
    Role,
    can_cancel,
    can_list_backends,
    can_read,
    can_submit,
    encode_principal,
    job_access,
    parse_principal,
    projects_of,
)
from hastegeo.settings.load import load_settings
from hastegeo.utils.errors import ConfigurationError
from hastegeo_dev.devhost.principal import parse_dev_principal

OID = "http://schemas.microsoft.com/identity/claims/objectidentifier"
ROLE_TYP = "http://schemas.microsoft.com/ws/2008/06/identity/claims/role"
GROUP_A = "6f1c2f3e-0000-4000-8000-00000000000a"
GROUP_B = "6f1c2f3e-0000-4000-8000-00000000000b"


def header(document: Any) -> str:
    return base64.b64encode(json.dumps(document, separators=(",", ":")).encode()).decode()


def easy_auth(*claims: tuple[str, str], **fields: Any) -> str:
    """A principal shaped like the one App Service authentication sends for an Entra ID user."""
    document = {
        "auth_typ": "aad",
        "name_typ": "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/name",
        "role_typ": ROLE_TYP,
        "claims": [{"typ": typ, "val": val} for typ, val in claims],
        **fields,
    }
    return header(document)


def who(roles: set[Role], projects: set[str] = frozenset()) -> Principal:  # type: ignore[assignment]
    return Principal("ana@example.com", "oid-1", frozenset(roles), frozenset(projects))


# --------------------------------------------------------------------------- parsing


def test_a_real_shaped_principal_gives_name_oid_roles_and_mapped_projects() -> None:
    value = easy_auth(
        ("http://schemas.xmlsoap.org/ws/2005/05/identity/claims/name", "ana@contoso.com"),
        (OID, "11111111-2222-3333-4444-555555555555"),
        ("roles", "Haste.Submitter"),
        ("roles", "Some.Other.App.Role"),
        ("groups", GROUP_A.upper()),
        ("groups", "not-mapped"),
    )
    principal = parse_principal(value, {GROUP_A: "p1", GROUP_B: "p2"})
    assert principal == Principal(
        name="ana@contoso.com",
        object_id="11111111-2222-3333-4444-555555555555",
        roles=frozenset({Role.SUBMITTER}),
        projects=frozenset({"p1"}),
        auth_type="aad",
    )


def test_roles_come_from_the_declared_role_typ() -> None:
    value = easy_auth(("name", "bo"), (ROLE_TYP, "Haste.Admin"), role_typ=ROLE_TYP)
    assert parse_principal(value).roles == {Role.ADMIN}
    custom = easy_auth(("name", "bo"), ("my-roles", "Haste.Reader"), role_typ="my-roles")
    assert parse_principal(custom).roles == {Role.READER}


def test_the_haste_projects_claim_adds_projects_and_drops_malformed_ids() -> None:
    value = easy_auth(("name", "dev"), ("roles", "Haste.Reader"), ("haste_projects", "demo, p1,../x,P2"))
    assert parse_principal(value).projects == {"demo", "p1"}


def test_the_name_falls_back_to_preferred_username_then_the_object_id() -> None:
    assert parse_principal(easy_auth(("preferred_username", "cy@x.org"))).name == "cy@x.org"
    assert parse_principal(easy_auth(("oid", "abc"))).name == "abc"


def test_control_characters_in_a_name_cannot_forge_log_lines() -> None:
    principal = parse_principal(easy_auth(("name", "eve\nWARNING fake line\r")))
    assert "\n" not in principal.name
    assert "\r" not in principal.name


def test_unpadded_base64_is_accepted() -> None:
    value = easy_auth(("name", "a"), ("roles", "Haste.Reader")).rstrip("=")
    assert parse_principal(value).name == "a"


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (None, "no X-MS-CLIENT-PRINCIPAL"),
        ("", "no X-MS-CLIENT-PRINCIPAL"),
        ("   ", "no X-MS-CLIENT-PRINCIPAL"),
        ("%%%not base64%%%", "not base64"),
        (base64.b64encode(b"\xff\xfe").decode(), "not JSON"),
        (base64.b64encode(b"{nope").decode(), "not JSON"),
        (header([1, 2]), "not a JSON object"),
        (header({"auth_typ": "aad"}), "no claims list"),
        (header({"claims": [{"typ": "name"}]}), "not {typ, val} strings"),
        (header({"claims": [{"typ": "name", "val": 3}]}), "not {typ, val} strings"),
        (header({"claims": [{"typ": "roles", "val": "Haste.Admin"}]}), "names nobody"),
        (header({"claims": [{"typ": "n", "val": ""}] * 1001}), "more than"),
        ("A" * (MAX_HEADER_CHARS + 1), "longer than"),
        (base64.b64encode(b"[" * 5000 + b"]" * 5000).decode(), "nested too deeply"),
        (base64.b64encode(b'{"claims": ' + b"[" * 3000 + b"]" * 3000 + b"}").decode(), "nested too deeply"),
    ],
)
def test_a_missing_or_broken_header_is_refused_without_quoting_it(value: str | None, reason: str) -> None:
    with pytest.raises(PrincipalError, match=reason) as caught:
        parse_principal(value)
    if value and value.strip():
        assert value[:20] not in str(caught.value)


def test_group_mapping_is_case_insensitive_and_ignores_unknown_groups() -> None:
    mapping = {GROUP_A: "p1", GROUP_B.upper(): "p2"}
    assert projects_of([GROUP_A.upper(), GROUP_B, "x"], mapping) == {"p1", "p2"}
    assert projects_of([], mapping) == frozenset()


def test_project_groups_setting_is_parsed_and_validated() -> None:
    env = {"AzureWebJobsStorage": "UseDevelopmentStorage=true", "HASTE_PROJECT_GROUPS": f"{GROUP_A}=p1, {GROUP_B}=p2"}
    settings = load_settings(env)
    assert settings.auth.project_groups == {GROUP_A: "p1", GROUP_B: "p2"}
    assert settings.auth.mode.value == "app_service"
    with pytest.raises(ConfigurationError, match="HASTE_PROJECT_GROUPS"):
        load_settings({**env, "HASTE_PROJECT_GROUPS": f"{GROUP_A}=Not A Project"})
    with pytest.raises(ConfigurationError, match="HASTE_AUTH_MODE"):
        load_settings({**env, "HASTE_AUTH_MODE": "trust_everyone"})


# --------------------------------------------------------------------------- the development principal


def test_a_dev_principal_string_round_trips_through_the_header() -> None:
    principal = parse_dev_principal("name=dev@example.com;roles=Haste.Admin;projects=demo,p1")
    assert principal.name == "dev@example.com"
    assert principal.roles == {Role.ADMIN}
    assert principal.projects == {"demo", "p1"}
    assert principal.object_id  # derived from the name, stable
    assert parse_dev_principal("name=dev@example.com").object_id == principal.object_id
    decoded = parse_principal(encode_principal(principal))
    assert (decoded.name, decoded.object_id, decoded.roles, decoded.projects) == (
        principal.name,
        principal.object_id,
        principal.roles,
        principal.projects,
    )


def test_a_dev_principal_accepts_short_role_names_and_an_explicit_oid() -> None:
    principal = parse_dev_principal(" name = r ; roles = reader, submitter ; oid = o-1 ; ")
    assert principal.roles == {Role.READER, Role.SUBMITTER}
    assert principal.object_id == "o-1"
    assert principal.projects == frozenset()


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "needs name"),
        ("roles=Haste.Admin", "needs name"),
        ("name=x;role=Haste.Admin", "expected name="),
        ("name=x;roles=Haste.Owner", "unknown role"),
        ("name=x;projects=Bad_Id", "not project ids"),
        ("just-a-name", "expected name="),
    ],
)
def test_a_malformed_dev_principal_is_refused(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_dev_principal(text)


# --------------------------------------------------------------------------- decisions


READER = who({Role.READER}, {"p1"})
SUBMITTER = who({Role.SUBMITTER}, {"p1"})
ADMIN = who({Role.ADMIN})
NOBODY = who(set(), {"p1"})


@pytest.mark.parametrize(
    ("principal", "project", "read", "submit"),
    [
        (READER, "p1", True, False),
        (READER, "p2", False, False),
        (SUBMITTER, "p1", True, True),
        (SUBMITTER, "p2", False, False),
        (ADMIN, "p1", True, True),
        (ADMIN, "anything", True, True),
        (NOBODY, "p1", False, False),
        (UNAUTHENTICATED_ADMIN, "p9", True, True),
    ],
)
def test_each_role_in_and_out_of_its_projects(principal: Principal, project: str, read: bool, submit: bool) -> None:
    assert bool(can_read(principal, project)) is read
    assert bool(can_submit(principal, project)) is submit
    assert bool(can_cancel(principal, project)) is submit


def test_reasons_name_the_role_or_the_project() -> None:
    assert "Haste.Reader cannot submit" in can_submit(READER, "p1").reason
    assert "not a member of project p2" in can_submit(SUBMITTER, "p2").reason
    assert "no Haste role" in can_read(NOBODY, "p1").reason


def test_backends_need_any_role() -> None:
    assert can_list_backends(READER)
    assert not can_list_backends(NOBODY)


def test_a_job_of_another_project_is_concealed_but_a_readable_one_is_refused_openly() -> None:
    assert job_access(SUBMITTER, "p1", "cancel").allowed
    hidden = job_access(SUBMITTER, "p2", "read")
    assert (hidden.allowed, hidden.conceal) == (False, True)
    assert job_access(SUBMITTER, "p2", "cancel").conceal
    refused = job_access(READER, "p1", "cancel")
    assert (refused.allowed, refused.conceal) == (False, False)
    assert job_access(READER, "p1", "read").allowed
    assert job_access(NOBODY, "p1", "read").conceal


def test_describe_names_the_caller_for_logs() -> None:
    assert SUBMITTER.describe() == "ana@example.com (oid oid-1)"
    assert Principal("x").describe() == "x"
