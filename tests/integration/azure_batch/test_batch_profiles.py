"""Compute profiles on Batch (ADR 0043), through the real azure-batch SDK against the Batch test service.

A ``gpu-t4-spot`` job lands on the profile's pool, a pool the service knows has
spot nodes, with the task settings such a pool needs: retries for a run whose
node was taken back, and the profile's run time as the task's wall-clock limit.
The workload's default pool still takes jobs that name no profile.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from azure.batch import BatchClient  # noqa: TID251 - tests of the Batch double speak Batch
from azure.core.credentials import AzureNamedKeyCredential

from hastegeo.compute.contract import ComputeState
from hastegeo.profiles import SPOT_RERUNS
from hastegeo.utils.errors import TerminalBackendError
from tests.integration.azure_batch.conftest import Rig

pytestmark = pytest.mark.azurite

PROFILES = json.dumps(
    {
        "gpu-t4-spot": {"pool": "gpu-t4-spot", "tier": "spot", "maxRunS": 14400, "workloads": ["imagery"]},
        "cpu-small": {"pool": "cpu-small", "maxRunS": 900, "workloads": ["imagery"]},
    }
)


def test_a_spot_profile_job_lands_on_the_spot_pool_with_the_task_settings_it_needs(rig: Rig) -> None:
    rig.service.shape_pool("gpu-t4-spot", vm_size="standard_nc4as_t4_v3", low_priority=True)
    backend = rig.make(BATCH_PROFILES=PROFILES)
    spec = rig.spec("spot-1", profile="gpu-t4-spot", time_limit_s=14400)
    handle = backend.submit(spec)
    assert handle.provider_ids["pool_id"] == "gpu-t4-spot"
    assert rig.service.jobs_on("gpu-t4-spot") == ["haste-spot-1"]
    assert rig.service.jobs_on("cpu-pool") == []

    client = BatchClient(rig.service.url, AzureNamedKeyCredential(rig.service.account_name, rig.service.account_key))
    with client:
        job = client.get_job("haste-spot-1")
        task = client.get_task("haste-spot-1", "haste-spot-1")
        pool = client.get_pool("gpu-t4-spot")
    assert job.pool_info.pool_id == "gpu-t4-spot"
    assert task.constraints.max_task_retry_count == SPOT_RERUNS
    assert task.constraints.max_wall_clock_time == timedelta(seconds=14400)
    assert (pool.vm_size, pool.target_dedicated_nodes) == ("standard_nc4as_t4_v3", 0)
    assert pool.target_low_priority_nodes >= 1
    rig.wait(handle)
    assert backend.status(handle).state is ComputeState.SUCCEEDED


def test_the_spot_pool_takes_a_node_back_and_the_task_runs_again_there(rig: Rig) -> None:
    rig.service.shape_pool("gpu-t4-spot", low_priority=True).preempt_spot("gpu-t4-spot", times=1)
    with pytest.raises(ValueError, match="dedicated nodes"):
        rig.service.preempt_spot("cpu-pool")
    backend = rig.make(BATCH_PROFILES=PROFILES)
    handle = backend.submit(rig.spec("spot-2", profile="gpu-t4-spot"))
    rig.wait(handle)
    status = backend.status(handle)
    assert status.state is ComputeState.SUCCEEDED
    assert status.detail == "task requeued after node preemption (retry 1)"
    assert rig.blob("p1/spot-2/outputs/x.txt") == b"hello world"


def test_a_dedicated_profile_and_the_default_land_on_their_own_pools(rig: Rig) -> None:
    backend = rig.make(BATCH_PROFILES=PROFILES)
    small = backend.submit(rig.spec("small-1", profile="cpu-small", time_limit_s=900))
    plain = backend.submit(rig.spec("plain-1"))
    assert (small.provider_ids["pool_id"], plain.provider_ids["pool_id"]) == ("cpu-small", "cpu-pool")
    client = BatchClient(rig.service.url, AzureNamedKeyCredential(rig.service.account_name, rig.service.account_key))
    with client:
        assert client.get_task("haste-small-1", "haste-small-1").constraints.max_task_retry_count == 0
    # The same job id under another profile is another submission: it is not bound to the first.
    with pytest.raises(TerminalBackendError):
        backend.submit(rig.spec("small-1", profile="gpu-t4-spot"))
    with pytest.raises(TerminalBackendError, match="under profile 'gpu-a100' \\(BATCH_PROFILES\\)"):
        backend.submit(rig.spec("gone-1", profile="gpu-a100"))
    rig.wait(small)
    rig.wait(plain)
