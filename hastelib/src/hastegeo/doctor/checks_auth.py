"""Sign-in: Easy Auth on the app with the expected audience, and the app registration it validates for.

What is expected comes from the deployed settings (``HASTE_AUTH_CLIENT_ID``,
``HASTE_PROJECT_GROUPS``), the app's host name and :mod:`hastegeo.doctor.needs`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from hastegeo.doctor.facts import AppRegistration, AuthSettings, RoleGrant, Unreadable
from hastegeo.doctor.needs import API_SCOPE, APP_ROLE_IDS, CONSOLE_PATH, GROUP_CLAIMS
from hastegeo.doctor.result import CheckResult, Status, failed, passed

EASY_AUTH = "easyauth"
ENTRA = "entra"
REGISTER = "infra/scripts/app-registration.sh --name <name>"


def check_easy_auth(auth: AuthSettings, client_id: str) -> list[CheckResult]:
    """Easy Auth on, every request authenticated (401 otherwise), Entra with the app's client id and audience."""
    fix = "run `azd provision` (infra/modules/functions.bicep sets authsettingsV2)"
    audience = f"api://{client_id}"
    checks = [
        (auth.enabled, "App Service authentication", "on", "off: the app trusts X-MS-CLIENT-PRINCIPAL from no one"),
        (
            auth.require_authentication and auth.unauthenticated_action == "Return401",
            "unauthenticated requests",
            "answered 401",
            f"requireAuthentication={auth.require_authentication}, action {auth.unauthenticated_action or 'unset'}",
        ),
        (
            auth.aad_enabled and auth.client_id.lower() == client_id.lower(),
            "Entra provider client id",
            client_id,
            f"provider {'on' if auth.aad_enabled else 'off'} with client id {auth.client_id or 'none'}, "
            f"HASTE_AUTH_CLIENT_ID is {client_id}",
        ),
        (
            audience in auth.allowed_audiences,
            "allowed audience",
            audience,
            f"allowed audiences {list(auth.allowed_audiences)} lack {audience}: tokens for the API are refused",
        ),
    ]
    return [
        passed(EASY_AUTH, name, good) if ok else failed(EASY_AUTH, name, bad, fix) for ok, name, good, bad in checks
    ]


def check_registration(
    app: AppRegistration,
    host_name: str,
    grants: Sequence[RoleGrant] | Unreadable,
    project_groups: Mapping[str, str],
    groups_claim: str | None = None,
) -> list[CheckResult]:
    """Identifier URI, the API scope, the app roles, the console's redirect URI, group claims, role assignments.

    ``groups_claim`` is the deployment's choice (``HASTE_GROUPS_CLAIM``: ``application`` with Entra ID
    P1, ``security`` without it), when known; otherwise either documented form passes, and the
    project groups are judged by the form the registration has.
    """
    console = f"https://{host_name}{CONSOLE_PATH}"
    rerun = f"{REGISTER} --console-url {console}"
    claims = app.group_membership_claims
    results = [
        _expect(f"api://{app.app_id}" in app.identifier_uris, "identifier URI", f"api://{app.app_id}", rerun),
        _expect(app.scopes.get(API_SCOPE) is True, "API scope", API_SCOPE, rerun),
        # Deferred: a deploy whose principal Graph refuses goes on, and an owner runs the script later.
        replace(
            _expect(
                console in app.spa_redirect_uris,
                "console redirect URI",
                console,
                f"infra/scripts/console-redirect.sh {app.app_id} https://{host_name}, signed in as an owner of the "
                "registration (or `" + rerun + "`); until then every console sign-in fails with AADSTS50011",
                found=f"single-page redirect URIs: {list(app.spa_redirect_uris) or 'none'}",
            ),
            deferred=True,
        ),
        _group_claims(claims, groups_claim, rerun),
    ]
    missing = sorted(role.value for role, role_id in APP_ROLE_IDS.items() if app.app_roles.get(role_id) != role.value)
    results.append(
        failed(ENTRA, "app roles", f"missing or disabled: {', '.join(missing)}", rerun)
        if missing
        else passed(ENTRA, "app roles", ", ".join(role.value for role in APP_ROLE_IDS))
    )
    if isinstance(grants, Unreadable):
        results.append(
            CheckResult(
                ENTRA,
                "role assignments",
                Status.UNKNOWN,
                f"could not be read: {grants.reason}",
                "sign in as the app registration's owner or with Application.Read.All",
            )
        )
        return results
    names = {role_id: role.value for role, role_id in APP_ROLE_IDS.items()}
    counts = {value: 0 for value in names.values()}
    for grant in grants:
        if grant.app_role_id in names:
            counts[names[grant.app_role_id]] += 1
    assign = (
        f"assign users (any Entra plan) or groups (Entra ID P1/P2) a role: {REGISTER} --submitters <group id>, "
        "or Enterprise applications > the app > Users and groups"
    )
    if any(counts.values()):
        results.append(passed(ENTRA, "role assignments", ", ".join(f"{value}: {n}" for value, n in counts.items())))
    else:
        results.append(failed(ENTRA, "role assignments", "nobody holds a role: every call answers 403", assign))
    assigned = {grant.principal_id.lower() for grant in grants}
    if claims == GROUP_CLAIMS["security"]:
        # The documented path without Entra ID P1: every security group is in the token, none is assigned.
        results.extend(
            passed(
                ENTRA,
                f"project group {project}",
                f"group {group} reaches the token as a security group (SecurityGroup claims; "
                "a member of more than 200 groups gets an overage claim instead)",
            )
            for group, project in sorted(project_groups.items())
        )
        return results
    for group, project in sorted(project_groups.items()):
        results.append(
            passed(ENTRA, f"project group {project}", f"group {group} is assigned to the app")
            if group.lower() in assigned
            else CheckResult(
                ENTRA,
                f"project group {project}",
                Status.FAIL,
                f"group {group} is not assigned to the app, so tokens never carry it "
                "(groupMembershipClaims ApplicationGroup) and its members see no project",
                f"assign the group a role on the app (needs Entra ID P1/P2): {REGISTER} --readers {group}, or "
                "infra/scripts/project-groups.sh signed in as someone Graph lets assign app roles",
                deferred=True,
            )
        )
    return results


def _group_claims(claims: str | None, expected: str | None, rerun: str) -> CheckResult:
    documented = {value: key for key, value in GROUP_CLAIMS.items()}
    if expected is not None:
        want = GROUP_CLAIMS[expected]
        if claims == want:
            return passed(ENTRA, "group claims", f"{want} (HASTE_GROUPS_CLAIM={expected})")
        return failed(
            ENTRA,
            "group claims",
            f"{claims or 'none'}, but HASTE_GROUPS_CLAIM={expected} wants {want}",
            f"{rerun} --groups-claim {expected}",
        )
    if claims in documented:
        path = "Entra ID P1: project groups assigned to the app" if claims == "ApplicationGroup" else "no P1 needed"
        return passed(ENTRA, "group claims", f"{claims} (--groups-claim {documented[claims]}, {path})")
    return failed(
        ENTRA,
        "group claims",
        f"{claims or 'none'}: tokens carry no project group",
        f"{rerun} --groups-claim application (Entra ID P1) or --groups-claim security (without P1)",
    )


def _expect(ok: bool, name: str, want: str, fix: str, *, found: str | None = None) -> CheckResult:
    return passed(ENTRA, name, want) if ok else failed(ENTRA, name, found or f"{want} is not set", fix)
