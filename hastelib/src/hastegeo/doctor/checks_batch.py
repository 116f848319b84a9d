"""Batch capacity: core quota per VM family for each pool's largest size, the pool quota, steady pools.

Quotas are per Batch account: dedicated cores per VM family (when the account enforces
per-family quota, else one dedicated total), one low-priority total, and a number of pools.
New accounts start some families at zero, most often the GPU ones, and a job on a pool that
cannot grow waits for its deadline: this check says so before the first job does.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hastegeo.doctor.facts import BatchAccount, Pool, Unreadable, VmSku
from hastegeo.doctor.result import CheckResult, Status, failed, passed

AREA = "batch"
QUOTA_DOCS = "https://learn.microsoft.com/azure/batch/batch-quota-limit#increase-a-quota"
# Resize error codes that mean a quota, not a transient shortage.
QUOTA_CODES = frozenset(
    {"AccountCoreQuotaReached", "AccountLowPriorityCoreQuotaReached", "AccountSpotCoreQuotaReached"}
)

_MAX = re.compile(r"\$target\s*=\s*min\(\s*(\d+)\s*,")
_LOW = re.compile(r"\$TargetDedicatedNodes\s*=\s*([01])\s*\?")


@dataclass(frozen=True)
class Size:
    """The most nodes a pool can ask for; ``known`` is False when its formula was not ours."""

    dedicated: int
    low_priority: int
    known: bool = True


def largest_size(pool: Pool) -> Size:
    """A fixed pool's targets, or the cap of infra/modules/batch.bicep's autoscale formula.

    That formula caps ``$target`` with ``min(<max nodes>, …)`` and gives it to dedicated or
    low-priority nodes by a literal 0/1. Another formula cannot be bounded by reading it:
    one node is assumed, and the result says so.
    """
    if pool.formula is None:
        return Size(pool.fixed_dedicated, pool.fixed_low_priority)
    cap, low = _MAX.search(pool.formula), _LOW.search(pool.formula)
    if cap is None or low is None:
        return Size(1, 0, known=False)
    nodes = int(cap.group(1))
    return Size(0, nodes) if low.group(1) == "1" else Size(nodes, 0)


def check_capacity(
    account: BatchAccount, pools: Sequence[Pool], skus: Mapping[str, VmSku], wanted: Sequence[str]
) -> list[CheckResult]:
    """Quota per VM family and low-priority total for the largest size of every pool; the pool quota."""
    results: list[CheckResult] = []
    count = len({pool.name for pool in pools} | set(wanted))
    if count <= account.pool_quota:
        results.append(passed(AREA, "pool quota", f"{count} pool(s), quota {account.pool_quota}"))
    else:
        results.append(
            failed(
                AREA,
                "pool quota",
                f"{count} pool(s) needed, account {account.name} allows {account.pool_quota}",
                f"request a pool quota of at least {count} for Batch account {account.name} ({QUOTA_DOCS})",
            )
        )
    dedicated: dict[str, int] = defaultdict(int)
    users: dict[str, list[str]] = defaultdict(list)
    low_priority = 0
    for pool in pools:
        size = largest_size(pool)
        sku = skus.get(pool.vm_size.lower())
        if sku is None:
            results.append(
                failed(
                    AREA,
                    f"vm size {pool.vm_size}",
                    f"pool {pool.name}: {pool.vm_size} is not offered by Batch in {account.location}",
                    "choose a size Batch offers there (az batch location list-skus --location "
                    f"{account.location}) in DEPLOY_BATCH_CPU_VM_SIZE / DEPLOY_BATCH_GPU_VM_SIZE and run "
                    "`azd provision`",
                )
            )
            continue
        if not size.known:
            results.append(
                CheckResult(
                    AREA,
                    f"pool {pool.name} size",
                    Status.WARN,
                    "its autoscale formula is not the one infra/modules/batch.bicep writes; checked for one node",
                )
            )
        dedicated[sku.family] += size.dedicated * sku.vcpus
        low_priority += size.low_priority * sku.vcpus
        users[sku.family].append(pool.name)
    for family, cores in sorted(dedicated.items()):
        if not cores:
            continue
        quota = account.per_family.get(family, 0) if account.per_family_enforced else account.dedicated_core_quota
        what = f"dedicated cores, {family}" if account.per_family_enforced else "dedicated cores (account total)"
        pools_text = ", ".join(users[family])
        if cores <= quota:
            results.append(passed(AREA, what, f"{cores} needed by {pools_text} at full size, quota {quota}"))
        else:
            results.append(
                failed(
                    AREA,
                    what,
                    f"{cores} needed by {pools_text} at full size, quota {quota}: "
                    + ("no node can start" if quota == 0 else "the pools cannot reach full size"),
                    f"request at least {cores} {what} for Batch account {account.name} ({QUOTA_DOCS}), or set "
                    "DEPLOY_BATCH_MAX_NODES / the VM size to fit the quota and run `azd provision`",
                )
            )
    total = sum(dedicated.values())
    if account.per_family_enforced and total > account.dedicated_core_quota:
        results.append(
            failed(
                AREA,
                "dedicated cores (account total)",
                f"{total} needed at full size, account quota {account.dedicated_core_quota}",
                f"request at least {total} dedicated cores for Batch account {account.name} ({QUOTA_DOCS})",
            )
        )
    if low_priority:
        if low_priority <= account.low_priority_core_quota:
            results.append(
                passed(AREA, "low-priority cores", f"{low_priority} needed, quota {account.low_priority_core_quota}")
            )
        else:
            results.append(
                failed(
                    AREA,
                    "low-priority cores",
                    f"{low_priority} needed at full size, quota {account.low_priority_core_quota}",
                    f"request at least {low_priority} low-priority cores for Batch account {account.name} "
                    f"({QUOTA_DOCS}), or set DEPLOY_BATCH_LOW_PRIORITY=false and run `azd provision`",
                )
            )
    return results


def check_pools(pools: Sequence[Pool], wanted: Mapping[str, str]) -> list[CheckResult]:
    """Every pool in BATCH_POOLS exists, is steady or resizing without errors, and autoscales cleanly."""
    by_name = {pool.name: pool for pool in pools}
    results = []
    for workload, name in sorted(wanted.items()):
        label = f"pool {name}"
        pool = by_name.get(name)
        if pool is None:
            results.append(
                failed(
                    AREA,
                    label,
                    f"BATCH_POOLS sends {workload} jobs to {name}, which does not exist",
                    "run `azd provision` (infra/modules/batch.bicep creates one pool per workload) or fix BATCH_POOLS",
                )
            )
            continue
        if pool.resize_errors:
            codes = "; ".join(f"{code}: {message}" for code, message in pool.resize_errors)
            quota = any(code in QUOTA_CODES for code, _ in pool.resize_errors)
            fix = (
                f"raise the Batch core quota ({QUOTA_DOCS}); the pool grows at its next autoscale evaluation"
                if quota
                else "the pool tries again at its next autoscale evaluation; if the error stays, "
                "change the VM size or region (DEPLOY_BATCH_*_VM_SIZE) and run `azd provision`"
            )
            results.append(failed(AREA, label, f"{pool.allocation_state} with resize errors: {codes}", fix))
        elif pool.autoscale_error is not None:
            code, message = pool.autoscale_error
            results.append(
                failed(
                    AREA,
                    label,
                    f"autoscale formula fails: {code}: {message}",
                    "fix the formula in infra/modules/batch.bicep and run `azd provision`",
                )
            )
        else:
            results.append(passed(AREA, label, f"{pool.allocation_state.lower()}, {pool.vm_size}, no resize errors"))
    return results


def unreadable(what: str, problem: Unreadable) -> CheckResult:
    """A Batch read that failed, with the role that would let the operator read it."""
    return CheckResult(
        AREA,
        what,
        Status.UNKNOWN,
        f"could not be read: {problem.reason}",
        "sign in as someone with Reader on the Batch account (the doctor reads through Azure Resource Manager)",
    )
