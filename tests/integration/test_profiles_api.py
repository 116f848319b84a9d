"""Compute profiles through the real API and pipeline (ADR 0043), on Azurite and the Batch test service.

A profile a workload or backend may not use is a 400 naming ``profile`` and
listing the allowed ones, with nothing stored and nothing queued; an accepted
one is on the job's record, ``auto`` sends it only where it is offered, and the
Batch job lands on the profile's spot pool with the pipeline's deadline bounded
by the profile's run time.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest

from hastegeo.models.states import JobState
from hastegeo.pipeline.accept import parse_request
from hastegeo.profiles import FINISH_GRACE_S, SPOT_RERUNS
from hastegeo.runtime import Runtime
from hastegeo.settings.load import load_settings
from hastegeo.store.queues import JobMessage
from hastegeo_dev.devhost.azurite import Azurite
from hastegeo_dev.testing.batch_service import BatchTestService
from tests.integration.conftest import drive, put_input, request
from tests.integration.test_api import VALID, call, jobs_stored, submit_queue_depth
from tests.support.runtime import development_runtime

pytestmark = pytest.mark.azurite

SPOT = {"pool": "gpu-t4-spot", "tier": "spot", "maxRunS": 600, "workloads": ["artifacts", "training"]}
BATCH_PROFILES = json.dumps({"gpu-t4-spot": SPOT})
LOCAL_PROFILES = json.dumps({"cpu-small": {"maxRunS": 300, "workloads": ["artifacts"]}})


def batch_env() -> dict[str, str]:
    return {
        "HASTE_BACKENDS_ENABLED": "local,azure_batch",
        "BATCH_ACCOUNT_URL": "https://acct.westeurope.batch.azure.com",
        "BATCH_POOLS": "artifacts=cpu-pool,training=gpu-pool",
        "BATCH_IMAGES": "artifacts=haste/geo:1,training=haste/geo:1",
        "BATCH_IDENTITY_RESOURCE_ID": "/subscriptions/s/resourceGroups/r/providers/Microsoft.ManagedIdentity/x",
        "BATCH_PROFILES": BATCH_PROFILES,
        "HASTE_LOCAL_PROFILES": LOCAL_PROFILES,
    }


@pytest.fixture
def api(api_settings: Callable[..., None]) -> None:
    api_settings(**batch_env())


def errors_of(body: dict[str, object]) -> dict[str, str]:
    return {e["field"]: e["message"] for e in body["errors"]}  # type: ignore[attr-defined]


@pytest.mark.usefixtures("api")
def test_a_profile_the_backend_does_not_offer_is_a_400_naming_profile_and_nothing_is_stored() -> None:
    before = submit_queue_depth()
    status, body, response = call(
        "submit_job", "POST", "/api/jobs", {**VALID, "backend": "local", "profile": "gpu-t4-spot"}
    )
    assert (status, response.mimetype) == (400, "application/problem+json")
    assert errors_of(body) == {
        "profile": "'gpu-t4-spot' is not offered to 'artifacts' workloads on local; allowed: default, cpu-small"
    }
    status, body, _ = call("submit_job", "POST", "/api/jobs", {**VALID, "profile": "gpu-a100"})  # auto
    assert status == 400
    assert errors_of(body)["profile"].endswith("on any enabled backend; allowed: default, cpu-small, gpu-t4-spot")
    status, body, _ = call("submit_job", "POST", "/api/jobs", {**VALID, "profile": "GPU T4"})
    assert status == 400
    assert list(errors_of(body)) == ["profile"]
    assert jobs_stored() == 0
    assert submit_queue_depth() == before


@pytest.mark.usefixtures("api")
def test_a_profile_not_allowed_for_the_workload_is_a_400_listing_that_workloads_profiles() -> None:
    body = {"workload": "imagery", "projectId": "p1", "inputs": [{"blob": "p1/a.tif"}], "profile": "gpu-t4-spot"}
    status, problem, _ = call("submit_job", "POST", "/api/jobs", body)
    assert status == 400
    assert errors_of(problem)["profile"] == (
        "'gpu-t4-spot' is not offered to 'imagery' workloads on any enabled backend; allowed: default"
    )  # the field is said once: in "field", not again at the start of the message
    assert jobs_stored() == 0


@pytest.mark.usefixtures("api")
def test_auto_sends_a_profile_only_where_it_is_offered_and_the_record_shows_it() -> None:
    for key in ("k1", "k2", "k3", "k4", "k5"):
        status, job, _ = call(
            "submit_job", "POST", "/api/jobs", {**VALID, "profile": "gpu-t4-spot"}, headers={"Idempotency-Key": key}
        )
        assert (status, job["backend"], job["profile"]) == (202, "azure_batch", "gpu-t4-spot")
    status, read, _ = call("get_job", "GET", f"/api/jobs/{job['id']}", route_params={"id": job["id"]})
    assert (status, read["profile"]) == (200, "gpu-t4-spot")
    assert read["history"][0]["message"].endswith("with profile gpu-t4-spot")
    status, plain, _ = call("submit_job", "POST", "/api/jobs", VALID)
    assert (status, plain["profile"]) == (202, "default")
    # A replay with the same key and profile is the same job; another profile under that key is a conflict.
    status, again, _ = call(
        "submit_job", "POST", "/api/jobs", {**VALID, "profile": "gpu-t4-spot"}, headers={"Idempotency-Key": "k5"}
    )
    assert (status, again["id"]) == (200, job["id"])
    status, _, _ = call("submit_job", "POST", "/api/jobs", VALID, headers={"Idempotency-Key": "k5"})
    assert status == 409


@pytest.mark.usefixtures("api")
def test_backends_list_each_backends_profiles_with_the_workloads_that_may_use_them() -> None:
    status, listing, _ = call("list_backends", "GET", "/api/backends")
    assert status == 200
    profiles = {b["name"]: {p["name"]: p for p in b["profiles"]} for b in listing["backends"]}
    assert list(profiles["azure_batch"]) == ["default", "gpu-t4-spot"]
    spot = profiles["azure_batch"]["gpu-t4-spot"]
    assert spot == {
        "name": "gpu-t4-spot",
        "tier": "spot",
        "maxRunS": 600,
        "runsOn": "pool gpu-t4-spot",
        "workloads": ["artifacts", "training"],
        "description": "",
    }
    assert profiles["azure_batch"]["default"]["workloads"] == ["artifacts", "training"]
    assert profiles["local"]["cpu-small"]["runsOn"] == "a local process"


@pytest.mark.usefixtures("api")
def test_a_group_item_naming_a_profile_it_may_not_use_is_a_400_at_its_path_and_nothing_is_stored() -> None:
    group = {
        "workload": "artifacts",
        "projectId": "p1",
        "profile": "gpu-t4-spot",
        "items": [{"inputs": [{"blob": "p1/a.txt"}]}, {"inputs": [{"blob": "p1/b.txt"}], "profile": "cpu-large"}],
    }
    status, body, _ = call("submit_group", "POST", "/api/groups", group)
    assert status == 400
    assert list(errors_of(body)) == ["items[1].profile"]
    assert "allowed: default, cpu-small, gpu-t4-spot" in errors_of(body)["items[1].profile"]
    status, body, _ = call(
        "submit_group", "POST", "/api/groups", {**group, "backend": "local", "items": group["items"][:1]}
    )
    assert status == 400
    assert list(errors_of(body)) == ["profile"]
    assert jobs_stored() == 0


CONTAINERS = {"HASTE_JOBS_CONTAINER": "jobs", "HASTE_OUTPUTS_CONTAINER": "outputs", "HASTE_INPUTS_CONTAINER": "inputs"}


@pytest.fixture
def spot_runtime(azurite: Azurite, unique: str) -> Iterator[tuple[Runtime, BatchTestService]]:
    service = BatchTestService(azurite.connection_string).start()
    service.shape_pool("gpu-t4-spot", vm_size="standard_nc4as_t4_v3", low_priority=True)
    env = {
        "AzureWebJobsStorage": azurite.connection_string,
        **{name: f"{kind}-{unique}" for name, kind in CONTAINERS.items()},
        **batch_env(),
        **service.settings(("artifacts", "training")),  # the service's own account, key and pools
        "BATCH_PROFILES": BATCH_PROFILES,
    }
    runtime = development_runtime(load_settings(env), sleep=lambda _: None)
    yield runtime, service
    for adapter in runtime.registry.built().values():
        adapter.close()
    service.stop()


def test_a_spot_profile_job_runs_on_the_spot_pool_through_the_pipeline_within_its_deadline(
    spot_runtime: tuple[Runtime, BatchTestService],
) -> None:
    runtime, service = spot_runtime
    put_input(runtime, "p1/a.txt", b"alpha")
    service.preempt_spot("gpu-t4-spot", times=1)
    job = runtime.acceptor.accept(parse_request(request(profile="gpu-t4-spot"))).job
    assert (job.backend, job.profile) == ("azure_batch", "gpu-t4-spot")
    runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
    running = runtime.deps.store.get(job.id)
    assert running.handle is not None
    assert running.handle.provider_ids["pool_id"] == "gpu-t4-spot"
    assert running.started_at is not None
    queue_limit = runtime.settings.queue_limit_s("azure_batch")
    bound = timedelta(seconds=queue_limit + (1 + SPOT_RERUNS) * 600 + FINISH_GRACE_S)
    assert running.deadline_at - running.started_at == bound  # not HASTE_RUN_DEADLINE_S's day
    assert service.jobs_on("gpu-t4-spot") == [running.handle.provider_ids["job_id"]]
    task = service.task(running.handle.provider_ids["job_id"], running.handle.provider_ids["task_id"])
    assert task.body["constraints"]["maxTaskRetryCount"] == SPOT_RERUNS
    finished = drive(runtime, job.id, timeout=60)
    assert finished.state is JobState.SUCCEEDED, finished.reason
    assert any("requeued after node preemption" in event.message for event in finished.history)
