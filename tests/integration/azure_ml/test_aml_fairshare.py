"""Admission before Azure ML (ADR 0032): the pipeline holds jobs back, says why, and lets projects take turns.

An Azure ML workspace queues a compute's jobs first come, first served, and nothing in it knows our
projects, so the pipeline keeps its own count before the adapter. Here through the runtime's own steps
and the production Azure ML adapter on the stand-in (``hastegeo_dev.testing.aml_standin``: the
azure-ai-ml SDK's own job entities); each test has an Azurite of its own, so its ``jobs-submit`` queue
holds only its jobs' messages and is delivered as the Functions host would, in order. The test plays
Azure ML's part: it ends jobs (``Completed`` or ``Failed``) one at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest
from azure.storage.queue import QueueClient, QueueServiceClient

from hastegeo.compute.azure_ml.adapter import AzureMLBackend, create
from hastegeo.compute.context import BackendContext
from hastegeo.models.states import JobState
from hastegeo.pipeline.accept import parse_request
from hastegeo.runtime import Runtime
from hastegeo.settings.load import load_settings
from hastegeo.store.queues import SUBMIT_QUEUE, JobMessage
from hastegeo_dev.devhost.azurite import Azurite
from hastegeo_dev.testing.aml_standin import StandInMLClient
from tests.integration.conftest import put_input, request
from tests.support.aml import AML_SETTINGS
from tests.support.runtime import development_runtime

pytestmark = [
    pytest.mark.azurite,
    pytest.mark.filterwarnings("ignore::marshmallow.warnings.RemovedInMarshmallow4Warning"),
]
AML = {"HASTE_BACKENDS_ENABLED": "azure_ml", **AML_SETTINGS}


@dataclass
class Workspace:
    """The pipeline over the Azure ML stand-in, and the test's hand on the queue the submit step reads."""

    runtime: Runtime
    standin: StandInMLClient
    submit_queue: QueueClient

    def submit(self, project: str) -> str:
        """A job of ``project`` through the acceptor (its submit message goes on the queue)."""
        fields = {"backend": "azure_ml", "projectId": project, "inputs": [{"blob": f"{project}/a.txt"}]}
        return self.runtime.acceptor.accept(parse_request(request(**fields))).job.id

    def deliver(self) -> None:
        """Run the submit step for every message on ``jobs-submit``, oldest first, until it is empty."""
        while messages := list(self.submit_queue.receive_messages(messages_per_page=32, visibility_timeout=60)):
            for message in messages:
                self.runtime.submit.handle(JobMessage.model_validate_json(message.content))
                self.submit_queue.delete_message(message)

    def given(self) -> list[str]:
        """Our job ids in the order the adapter created their Azure ML jobs."""
        return [name.removeprefix("haste-") for op, name in self.standin.calls if op == "jobs.create_or_update"]

    def end(self, job_id: str, status: str = "Failed") -> None:
        """Azure ML ends the job; the poll step's next look sees it, frees its seat and submits the job that got it."""
        error = ("UserError", "exit code 1") if status == "Failed" else None
        self.standin.set_status(f"haste-{job_id}", status, error=error)
        self.runtime.poll.handle(JobMessage(job_id=job_id, kind="nudge"))
        assert self.runtime.store.get(job_id).state.terminal
        self.deliver()  # anything sent meanwhile (a seat's job whose hand-over failed would come this way)

    def waiting_lines(self, job_id: str) -> list[str]:
        return [e.message for e in self.runtime.store.get(job_id).history if e.message.startswith("waiting:")]


@contextmanager
def workspace(**limits: str) -> Iterator[Workspace]:
    standin = StandInMLClient()

    def factory(context: BackendContext) -> AzureMLBackend:  # the production factory, on the stand-in
        return create(context, client_factory=lambda _settings: standin)

    with Azurite(in_memory=True) as azurite:
        settings = load_settings({"AzureWebJobsStorage": azurite.connection_string, **AML, **limits})
        runtime = development_runtime(settings, factories={"azure_ml": factory}, sleep=lambda _: None)
        for project in ("p1", "p2", "pa", "pb"):
            put_input(runtime, f"{project}/a.txt", b"alpha")
        queue = QueueServiceClient.from_connection_string(azurite.connection_string).get_queue_client(SUBMIT_QUEUE)
        try:
            yield Workspace(runtime, standin, queue)
        finally:
            for adapter in runtime.registry.built().values():
                adapter.close()


@pytest.mark.parametrize(
    ("limits", "reason"),
    [
        ({"HASTE_PROJECT_MAX_RUNNING": "2"}, "waiting: project p1 has 2 of 2 running jobs"),
        (
            {"HASTE_PROJECT_MAX_RUNNING_PER_BACKEND": "azure_ml=2"},
            "waiting: project p1 has 2 of 2 running jobs on azure_ml",
        ),
    ],
    ids=["all-backends", "per-backend"],
)
def test_a_project_never_has_more_azure_ml_jobs_than_its_limit(limits: dict[str, str], reason: str) -> None:
    with workspace(**limits) as aml:
        burst = [aml.submit("p1") for _ in range(6)]
        other = aml.submit("p2")
        aml.deliver()
        assert aml.given() == [*burst[:2], other]  # another project is not held by p1's limit
        for job_id in burst[2:]:
            assert aml.runtime.store.get(job_id).state is JobState.QUEUED
            assert aml.waiting_lines(job_id) == [reason]
            assert aml.runtime.store.get(job_id).waiting_for_compute == reason.removeprefix("waiting: ")
        aml.runtime.submit.handle(JobMessage(job_id=burst[2], kind="submit"))  # redelivered: no new line
        assert aml.waiting_lines(burst[2]) == [reason]

        ended: list[str] = []
        while len(ended) < len(burst):
            running = [job_id for job_id in aml.given() if job_id in burst and job_id not in ended]
            assert len(running) <= 2, f"p1 has {len(running)} Azure ML jobs at once"
            oldest = running[0]
            aml.end(oldest, "Completed" if len(ended) % 2 else "Failed")
            ended.append(oldest)
        assert aml.given() == [*burst[:2], other, *burst[2:]]  # one Azure ML job each, oldest first
        assert aml.waiting_lines(burst[-1]) == [reason]  # said once, though it waited through four ends


def test_a_job_of_another_project_is_given_to_azure_ml_before_the_rest_of_a_burst() -> None:
    seats = "waiting: all 4 seats of azure_ml are taken; projects take turns"
    with workspace(HASTE_BACKEND_MAX_RUNNING="azure_ml=4") as aml:
        burst = [aml.submit("pa") for _ in range(20)]
        aml.deliver()
        assert aml.given() == burst[:4]
        aml.end(burst[0])
        aml.end(burst[1], "Completed")
        assert aml.given() == burst[:6]  # mid-burst: A's jobs run as seats free, 14 of them waiting

        b = aml.submit("pb")
        aml.deliver()
        waiting_then = [job_id for job_id in burst if job_id not in aml.given()]
        assert len(waiting_then) == 14
        assert aml.waiting_lines(b) == [seats]
        assert all(aml.waiting_lines(job_id) == [seats] for job_id in waiting_then)

        aml.end(burst[2])  # the first seat that frees goes to B: A holds 3, B none
        assert aml.given()[-1] == b
        assert aml.runtime.store.get(b).state is JobState.RUNNING
        for job_id in burst[3:]:
            aml.end(job_id)
        order = aml.given()
        assert order == [*burst[:6], b, *waiting_then]  # B before every one of A's waiting jobs, once each
