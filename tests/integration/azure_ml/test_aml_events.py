"""Azure ML's run events nudge the pipeline (ADR 0048): the end is seen when the event arrives.

The stand-in publishes each status change as Azure ML's ``RunStatusChanged`` event, in the
Event Grid schema, to the ``provider-events`` queue on Azurite, as the workspace's Event Grid
subscription does in a deployment. The test delivers that queue to the runtime's
``provider_events`` step, as the app's queue trigger does.
"""

from __future__ import annotations

import base64
import json

import pytest
from azure.storage.queue import QueueServiceClient

from hastegeo.models.states import JobState
from hastegeo.store.queues import PROVIDER_EVENTS_QUEUE
from tests.integration.azure_ml.test_aml_fairshare import Workspace, workspace

pytestmark = [
    pytest.mark.azurite,
    pytest.mark.filterwarnings("ignore::marshmallow.warnings.RemovedInMarshmallow4Warning"),
]


def deliver_events(aml: Workspace) -> list[list[str]]:
    """Every message on ``provider-events`` to the step, oldest first: the job ids each one named."""
    queue = QueueServiceClient.from_connection_string(aml.runtime.settings.storage.connection_string).get_queue_client(
        PROVIDER_EVENTS_QUEUE
    )
    named = []
    while messages := list(queue.receive_messages(messages_per_page=32, visibility_timeout=60)):
        for message in messages:
            named.append(aml.runtime.provider_events.handle(message.content.encode()))
            queue.delete_message(message)
    return named


def publish_to_queue(aml: Workspace, *, encode: bool = False) -> None:
    queue = QueueServiceClient.from_connection_string(aml.runtime.settings.storage.connection_string).get_queue_client(
        PROVIDER_EVENTS_QUEUE
    )
    aml.standin.publish_events(
        lambda text: queue.send_message(base64.b64encode(text.encode()).decode() if encode else text)
    )


@pytest.mark.parametrize("encode", [False, True], ids=["json", "base64"])
def test_an_ended_run_is_seen_when_its_event_arrives_without_a_poll(encode: bool) -> None:
    with workspace() as aml:
        publish_to_queue(aml, encode=encode)
        job_id = aml.submit("p1")
        aml.deliver()
        aml.standin.set_status(f"haste-{job_id}", "Running")
        assert deliver_events(aml) == [[]]  # a run that started ends nothing: no look
        looks = aml.standin.count("jobs.get")
        aml.standin.set_status(f"haste-{job_id}", "Failed", error=("UserError", "exit code 3"))
        assert deliver_events(aml) == [[job_id]]
        job = aml.runtime.store.get(job_id)
        assert job.state is JobState.FAILED, job.history
        assert "exit code 3" in (job.reason or "")
        assert aml.standin.count("jobs.get") > looks  # the step asked Azure ML, it did not take the event's word


def test_an_event_repeated_or_about_another_workspace_job_changes_nothing() -> None:
    with workspace() as aml:
        publish_to_queue(aml)
        job_id = aml.submit("p1")
        aml.deliver()
        aml.standin.set_status(f"haste-{job_id}", "Running")
        deliver_events(aml)
        # Azure ML says it ended, but the job still runs when the step asks: the event is not trusted.
        event = {
            "eventType": "Microsoft.MachineLearningServices.RunCompleted",
            "data": {"runId": f"haste-{job_id}", "runTags": {"haste_job_id": job_id}},
        }
        assert aml.runtime.provider_events.handle(json.dumps(event).encode()) == [job_id]
        assert aml.runtime.store.get(job_id).state is JobState.RUNNING
        # Not ours (no tag), malformed, or naming a job that does not exist: nothing happens, nothing raises.
        stranger = {**event, "data": {"runId": "someone-elses", "runTags": {}}}
        assert aml.runtime.provider_events.handle(json.dumps(stranger).encode()) == []
        assert aml.runtime.provider_events.handle(b"\x00not json") == []
        ghost = {**event, "data": {"runTags": {"haste_job_id": "j0000000000000"}}}
        assert aml.runtime.provider_events.handle(json.dumps(ghost).encode()) == ["j0000000000000"]
        aml.standin.set_status(f"haste-{job_id}", "Failed", error=("UserError", "exit code 1"))
        assert deliver_events(aml) == [[job_id]]
        assert aml.runtime.store.get(job_id).state is JobState.FAILED
        history = len(aml.runtime.store.get(job_id).history)
        aml.runtime.provider_events.handle(json.dumps(event).encode())  # the same end told again
        assert len(aml.runtime.store.get(job_id).history) == history
