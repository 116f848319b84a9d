"""The Batch capacity rules on their own: per-family or total quota, low priority, sizes Batch does not offer."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hastegeo.doctor.checks_batch import check_capacity
from hastegeo.doctor.facts import BatchAccount, Pool, VmSku
from hastegeo.doctor.result import CheckResult, Status

SKUS = {
    "standard_d4s_v5": VmSku("Standard_D4s_v5", "standardDSv5Family", 4),
    "standard_nc4as_t4_v3": VmSku("Standard_NC4as_T4_v3", "standardNCASv3_T4Family", 4),
}


def formula(nodes: int, low: bool) -> str:
    flag = "1" if low else "0"
    return f"$target = min({nodes}, $pending);\n$TargetDedicatedNodes = {flag} ? 0 : $target;\n"


BASE = BatchAccount(
    name="ba",
    location="westeurope",
    dedicated_core_quota=100,
    low_priority_core_quota=10,
    per_family={"standardDSv5Family": 100},
    per_family_enforced=True,
    pool_quota=20,
)


def account(**overrides: Any) -> BatchAccount:
    return replace(BASE, **overrides)


def pool(name: str, size: str, nodes: int, low: bool = False) -> Pool:
    return Pool(name, size, "Steady", formula(nodes, low), 0, 0, (), None)


def by_name(results: list[CheckResult]) -> dict[str, CheckResult]:
    return {r.name: r for r in results}


def test_a_family_missing_from_an_enforced_list_has_no_quota() -> None:
    results = by_name(check_capacity(account(), [pool("gpu", "Standard_NC4as_T4_v3", 2)], SKUS, ["gpu"]))
    assert results["dedicated cores, standardNCASv3_T4Family"].status is Status.FAIL
    assert "quota 0" in results["dedicated cores, standardNCASv3_T4Family"].found


def test_without_per_family_enforcement_the_account_total_applies() -> None:
    results = by_name(
        check_capacity(account(per_family_enforced=False), [pool("gpu", "Standard_NC4as_T4_v3", 2)], SKUS, ["gpu"])
    )
    assert results["dedicated cores (account total)"].status is Status.PASS


def test_low_priority_pools_count_against_the_low_priority_quota() -> None:
    results = by_name(check_capacity(account(), [pool("cpu", "Standard_D4s_v5", 3, low=True)], SKUS, ["cpu"]))
    assert results["low-priority cores"].status is Status.FAIL
    assert "12 needed" in results["low-priority cores"].found
    assert "DEPLOY_BATCH_LOW_PRIORITY=false" in results["low-priority cores"].fix
    assert not any(name.startswith("dedicated") for name in results)


def test_a_size_batch_does_not_offer_fails() -> None:
    results = by_name(check_capacity(account(), [pool("cpu", "Standard_Z9", 1)], SKUS, ["cpu"]))
    assert results["vm size Standard_Z9"].status is Status.FAIL
    assert "az batch location list-skus --location westeurope" in results["vm size Standard_Z9"].fix


def test_a_fixed_scale_pool_counts_its_targets() -> None:
    fixed = Pool("cpu", "Standard_D4s_v5", "Steady", None, 30, 0, (), None)
    results = by_name(check_capacity(account(), [fixed], SKUS, ["cpu"]))
    assert results["dedicated cores, standardDSv5Family"].status is Status.FAIL
    assert results["dedicated cores (account total)"].status is Status.FAIL
