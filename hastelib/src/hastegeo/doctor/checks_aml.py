"""Azure ML: the workspace, compute targets, datastores and registered Environment the app uses exist,
and the clusters fit Azure ML's own quota in the region.

Every job mounts both datastores, so a missing one fails every submission. A missing registered
Environment is only a warning: the first submit (or ``haste aml create-environment``) creates it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

from hastegeo.doctor.facts import AmlUsage, AmlVmSize, Lookup, Unreadable, family_key
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


QUOTA_DOCS = "https://learn.microsoft.com/azure/machine-learning/how-to-manage-quotas#request-quota-and-limit-increases"
TIERS = {"dedicated": "dedicated", "low_priority": "lowpriority", "lowpriority": "lowpriority"}
TOTALS = {"dedicated": "dedicatedCores", "lowpriority": "lowPriorityCores"}


def check_quota(
    clusters: Sequence[Lookup], capacity: tuple[Mapping[str, AmlVmSize], Sequence[AmlUsage]] | Unreadable, region: str
) -> list[CheckResult]:
    """vCPUs each cluster needs at its largest size against Azure ML's quota per VM family and in total.

    Azure ML compute has a quota of its own, per subscription and region, separate from the
    subscription's VM cores; new subscriptions start GPU families at zero, and a cluster that
    cannot get a node leaves every job on it queued until its deadline.
    """
    if isinstance(capacity, Unreadable):
        return [
            CheckResult(
                AREA,
                f"Azure ML quota in {region}",
                Status.UNKNOWN,
                f"could not be read: {capacity.reason}",
                "sign in with Reader on the workspace's subscription and run the doctor again",
            )
        ]
    sizes, usages = capacity
    results: list[CheckResult] = []
    need: dict[tuple[str, str], int] = defaultdict(int)
    node: dict[tuple[str, str], int] = defaultdict(int)
    names: dict[tuple[str, str], str] = {}
    users: dict[tuple[str, str], list[str]] = defaultdict(list)
    for cluster in clusters:
        if not cluster.found or "size" not in cluster.extra:
            continue
        size = sizes.get(cluster.extra["size"].lower())
        if size is None:
            results.append(
                failed(
                    AREA,
                    f"vm size {cluster.extra['size']}",
                    f"cluster {cluster.name}: {cluster.extra['size']} is not offered by Azure ML in {region}",
                    f"choose a size `az ml compute list-sizes --location {region}` lists (DEPLOY_AML_CPU_VM_SIZE / "
                    "DEPLOY_AML_GPU_VM_SIZE in Create mode) and run `azd provision`",
                )
            )
            continue
        key = (family_key(size.family), TIERS.get(cluster.extra.get("tier", "dedicated").lower(), "dedicated"))
        need[key] += size.vcpus * int(cluster.extra.get("max_nodes") or 0)
        node[key] = max(node[key], size.vcpus)
        names[key] = size.family
        users[key].append(cluster.name)
    family_lines = {(u.key, u.tier): u for u in usages if u.scope == "vmFamily" and u.tier}
    for key, cores in sorted(need.items()):
        family, tier = names[key], key[1]
        what = f"Azure ML {'low-priority' if tier == 'lowpriority' else 'dedicated'} vCPUs, {family}"
        usage = family_lines.get(key)
        if usage is None or usage.limit < 0:
            continue  # no family limit of its own: the regional total below decides
        results.append(_against(what, cores, node[key], users[key], usage, region))
    for tier, kind in TOTALS.items():
        cores = sum(value for (_, t), value in need.items() if t == tier)
        total = next((u for u in usages if u.scope == kind), None)
        if cores and total is not None and total.limit >= 0:
            label = "low-priority" if tier == "lowpriority" else "dedicated"
            largest = max(value for (_, t), value in node.items() if t == tier)
            clusters_of_tier = [name for (_, t), names_ in users.items() if t == tier for name in names_]
            results.append(
                _against(f"Azure ML {label} vCPUs, region total", cores, largest, clusters_of_tier, total, region)
            )
    return results


def _against(what: str, cores: int, node: int, clusters: Sequence[str], usage: AmlUsage, region: str) -> CheckResult:
    found = f"{cores} needed by {', '.join(clusters)} at full size, quota {usage.limit} ({usage.current} in use)"
    if cores <= usage.limit:
        return passed(AREA, what, found)
    short = "no node can start" if usage.limit < node else "the clusters cannot reach full size"
    return CheckResult(
        AREA,
        what,
        Status.FAIL,
        f"{found}: {short}",
        f"request at least {cores} {what.removeprefix('Azure ML ')} for Azure ML in {region} (Azure ML studio, "
        f"Quota; {QUOTA_DOCS}); `az ml compute list-usage --location {region}` shows it. Not the VM cores of "
        "`az vm list-usage`: Azure ML counts its own",
        deferred=True,
    )
