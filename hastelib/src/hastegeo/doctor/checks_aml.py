"""Azure ML: the workspace, compute targets, datastores and registered Environment the app uses exist.

Every job mounts both datastores, so a missing one fails every submission. A missing registered
Environment is only a warning: the first submit (or ``haste aml create-environment``) creates it.
"""

from __future__ import annotations

from collections.abc import Sequence

from hastegeo.doctor.facts import Lookup
from hastegeo.doctor.result import CheckResult, Status, failed, passed

AREA = "aml"
FIXES = {
    "workspace": "set AML_WORKSPACE / AML_RESOURCE_GROUP / AML_SUBSCRIPTION_ID to an existing workspace "
    "(DEPLOY_AML_* for azd) or use AML_MODE=Create, and run `azd provision`",
    "compute": "create the compute cluster in the workspace or set AML_COMPUTE to clusters that exist "
    "(Create mode makes haste-cpu and haste-gpu)",
    "datastore": "create an identity-based blob datastore over the container (Create mode makes them) or map "
    "the container with AML_DATASTORES=<container>=<datastore>",
    "environment": "run `haste aml create-environment` (or let the first submit register it)",
}


def check_aml(found: Sequence[Lookup]) -> list[CheckResult]:
    results = []
    for lookup in found:
        name = f"{lookup.kind} {lookup.name}"
        if lookup.found:
            results.append(passed(AREA, name, "exists"))
        elif lookup.problem is not None:
            results.append(
                CheckResult(
                    AREA,
                    name,
                    Status.UNKNOWN,
                    lookup.problem,
                    "check the coordinates and that the signed-in identity holds a role on the workspace "
                    "(AzureML Data Scientist or Reader)",
                )
            )
        elif lookup.kind == "environment":
            results.append(CheckResult(AREA, name, Status.WARN, "not registered yet", FIXES["environment"]))
        else:
            results.append(failed(AREA, name, "does not exist", FIXES[lookup.kind]))
    return results
