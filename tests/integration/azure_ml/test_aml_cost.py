"""An Azure ML job's cost to the cent: instance type, count and tier from the stand-in (the SDK's entities)."""

from __future__ import annotations

import time

import pytest

from hastegeo.costs.attribution import Basis
from hastegeo.costs.prices import Priority, shipped_table
from tests.integration.azure_ml.test_aml_fairshare import workspace

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
