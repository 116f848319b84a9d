"""Do the app's and the compute identity's role assignments cover every :data:`~.needs.ROLE_NEEDS`?"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hastegeo.doctor.facts import Assignment, Unreadable
from hastegeo.doctor.needs import ROLE_NEEDS, RoleNeed, Scope, Who
from hastegeo.doctor.result import CheckResult, Status, failed, passed

AREA = "roles"
WHO = {"app": "the Functions app's identity", "compute": "the compute identity (Batch pools, Azure ML clusters)"}


def covers(assignment: Assignment, need: RoleNeed, principal_id: str, resource_id: str) -> bool:
    """An assignment meets a need when it is the principal's, an accepted role, at the resource or above."""
    scope = assignment.scope.rstrip("/").lower()
    target = resource_id.rstrip("/").lower()
    return (
        assignment.principal_id.lower() == principal_id.lower()
        and assignment.role_id.lower() in need.accepted_ids()
        and (target == scope or target.startswith(scope + "/"))
    )


def grant_command(need: RoleNeed, principal_id: str, resource_id: str) -> str:
    return (
        f"az role assignment create --assignee-object-id {principal_id} --assignee-principal-type "
        f'ServicePrincipal --role "{need.role_name}" --scope {resource_id}'
        " (or run `azd provision` again; a new assignment can take up to 10 minutes to apply)"
    )


def check_roles(
    principals: Mapping[Who, str | Unreadable | None],
    scopes: Mapping[Scope, str | None],
    assignments: Mapping[str, Sequence[Assignment] | Unreadable],
) -> list[CheckResult]:
    """One result per need whose resource is deployed (``scopes[scope]`` None: not deployed, no need).

    ``assignments`` maps each resource id to the role assignments that apply there (at, above or
    below it), or to why they could not be read.
    """
    results = []
    for need in ROLE_NEEDS:
        resource_id = scopes.get(need.scope)
        if resource_id is None:
            continue
        name = f"{need.who}: {need.role_name} on {need.scope}"
        principal_id = principals.get(need.who)
        if isinstance(principal_id, Unreadable) or not principal_id:
            reason = f"could not be read: {principal_id.reason}" if principal_id else "was not found"
            results.append(
                CheckResult(
                    AREA,
                    name,
                    Status.UNKNOWN,
                    f"{WHO[need.who]} {reason}",
                    "run `azd provision` (infra/main.bicep creates both identities; BATCH_IDENTITY_RESOURCE_ID names "
                    "the compute one), or sign in with Reader on the resource group",
                )
            )
            continue
        found = assignments.get(resource_id, Unreadable("not read"))
        if isinstance(found, Unreadable):
            results.append(
                CheckResult(
                    AREA,
                    name,
                    Status.UNKNOWN,
                    f"role assignments on {resource_id} could not be read: {found.reason}",
                    "sign in (az login) as someone who may read role assignments there, e.g. Reader on the "
                    "resource group, and run the doctor again",
                )
            )
        elif any(covers(assignment, need, principal_id, resource_id) for assignment in found):
            results.append(passed(AREA, name, f"{WHO[need.who]} has it ({need.why})"))
        else:
            results.append(
                failed(
                    AREA,
                    name,
                    f"{WHO[need.who]} ({principal_id}) has no {need.role_name} on {resource_id}: {need.why} fails",
                    grant_command(need, principal_id, resource_id),
                )
            )
    return results
