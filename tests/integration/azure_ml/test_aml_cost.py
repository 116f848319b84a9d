"""An Azure ML job's cost to the cent: instance type, count and tier from the stand-in (the SDK's entities)."""

from __future__ import annotations

import json
import time

import pytest

from hastegeo.costs.attribution import Basis
from hastegeo.costs.prices import Priority, shipped_table
from hastegeo.pipeline.accept import parse_request
from tests.integration.azure_ml.test_aml_fairshare import workspace
from tests.integration.conftest import request

pytestmark = [
    pytest.mark.azurite,
    pytest.mark.filterwarnings("ignore::marshmallow.warnings.RemovedInMarshmallow4Warning"),
]


@pytest.mark.parametrize("tier", ["dedicated", "low_priority"])
def test_an_azure_ml_job_costs_its_run_time_on_its_cluster(tier: str) -> None:
    with workspace() as aml:
        aml.standin.shape_compute("haste-cpu", size="STANDARD_D4s_v3", tier=tier, region="northeurope")
        job_id = aml.submit("p1")
        aml.deliver()
        aml.standin.set_status(f"haste-{job_id}", "Running")
        time.sleep(0.2)
        aml.end(job_id)
        job = aml.runtime.store.get(job_id)
        assert job.usage is not None, job
        assert job.cost is not None
        [run] = job.usage.runs
        priority = Priority.parse(tier)
        price = shipped_table().lookup("northeurope", "Standard_D4s_v3", priority).per_hour
        assert price is not None
        assert run.attempt.seconds() > 0
        assert job.cost.amount == run.attempt.seconds() * price / 3600
        [attempt] = job.cost.attempts
        assert (attempt.basis, attempt.priority, attempt.unit) == (Basis.METERED, priority, "instance-hour")


def test_a_cluster_in_a_region_the_table_does_not_cover_has_no_amount() -> None:
    with workspace() as aml:
        aml.standin.shape_compute("haste-cpu", size="STANDARD_D4s_v3", region="antarctica")
        job_id = aml.submit("p1")
        aml.deliver()
        aml.standin.set_status(f"haste-{job_id}", "Running")
        aml.end(job_id)
        cost = aml.runtime.store.get(job_id).cost
        assert cost is not None
        assert cost.amount is None
        assert cost.reason
        assert "antarctica" in cost.reason


def test_a_spot_profile_job_is_priced_as_spot_for_its_own_instance_type_and_count() -> None:
    profiles = {
        "gpu-t4-spot": {
            "compute": "haste-cpu",
            "instanceType": "Standard_D4s_v3",
            "instanceCount": 2,
            "tier": "spot",
            "maxRunS": 3600,
            "workloads": ["artifacts"],
        }
    }
    with workspace(AML_PROFILES=json.dumps(profiles)) as aml:
        # The cluster says dedicated D2s; the job asked for two D4s instances in the spot tier.
        aml.standin.shape_compute("haste-cpu", size="STANDARD_D2s_v3", tier="dedicated", region="northeurope")
        fields = {"backend": "azure_ml", "projectId": "p1", "inputs": [{"blob": "p1/a.txt"}], "profile": "gpu-t4-spot"}
        job_id = aml.runtime.acceptor.accept(parse_request(request(**fields))).job.id
        aml.deliver()
        aml.standin.set_status(f"haste-{job_id}", "Running")
        time.sleep(0.2)
        aml.end(job_id)
        job = aml.runtime.store.get(job_id)
        assert job.profile == "gpu-t4-spot"
        assert job.cost is not None
        [attempt] = job.cost.attempts
        assert attempt.priority is Priority.SPOT
        [run] = job.usage.runs if job.usage else []
        assert (run.attempt.instance_type, run.attempt.instance_count) == ("Standard_D4s_v3", 2)
        spot = shipped_table().lookup("northeurope", "Standard_D4s_v3", Priority.SPOT).per_hour
        assert spot is not None
        assert job.cost.amount == 2 * run.attempt.seconds() * spot / 3600
