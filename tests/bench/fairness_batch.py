"""Fair share on the Batch test service: project A's burst, then one job of project B (see fairness_bench).

The pool has ``slots`` task slots and takes its tasks first come, first served, as
Batch does (:meth:`BatchTestService.size_pool`). "today's order" gives every job to
Batch at once; "projects in turn" goes through the pipeline's admission
(:class:`hastegeo.pipeline.admission.Admission`, its book in Azurite,
``HASTE_BACKEND_MAX_RUNNING=azure_batch=<slots>``): a job without a seat waits in
the book; the end of a job, seen by polling its Batch task, frees its seat, and the
thread that saw it submits the job that got the seat at once (the pipeline's hand-over,
ADR 0032's addendum). "in turn, by message" is the same admission as first shipped: the
jobs that got a seat come back on the ``jobs-submit`` queue, where this driver plays
the submit step (seat, then the adapter's submit). Every call is the real SDK's
against the service on 127.0.0.1.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

from azure.storage.blob import BlobServiceClient
from azure.storage.queue import QueueServiceClient

from hastegeo.compute.azure_batch.adapter import BatchBackend, create
from hastegeo.compute.context import BackendContext
from hastegeo.compute.contract import BlobLocation, ComputeJobHandle, ComputeJobSpec
from hastegeo.pipeline.admission import Admission
from hastegeo.pipeline.admission.book import AdmissionBook
from hastegeo.pipeline.admission.fairshare import Limits
from hastegeo.settings.load import load_settings
from hastegeo.store.queues import SUBMIT_QUEUE, JobMessage, QueueSender
from hastegeo_dev.testing.batch_service import BatchTestService

POOL = "fair-pool"
WORKLOAD = ("python", "-c", "import time; time.sleep(0.5)")  # a pool drains slower than a burst arrives
SUBMITTERS = 4  # the burst is submitted by this many workers at once, as the Functions host takes messages
TODAY = "today's order"
TURNS = "projects in turn"
BY_MESSAGE = "in turn, by message"  # before the hand-over: a freed seat's job waits for its submit message


def _spec(name: str, project: str, container: str) -> ComputeJobSpec:
    return ComputeJobSpec(
        job_id=name,
        name=f"haste-{name}",
        workload="imagery",
        entrypoint=WORKLOAD,
        output=BlobLocation(container=container, path=f"jobs/{name}"),
        labels={"project": project},
        time_limit_s=600,
    )


class Driver:
    """The pipeline's submit and poll steps, reduced to what admission needs (no job documents)."""

    def __init__(self, connection: str, order: str, slots: int) -> None:
        self.service = BatchTestService(connection).start().size_pool(POOL, slots)
        self.blobs = BlobServiceClient.from_connection_string(connection)
        self.container = "fairness"
        self.blobs.create_container(self.container)
        env = {
            "AzureWebJobsStorage": connection,
            "HASTE_BACKENDS_ENABLED": "azure_batch",
            "BATCH_ACCOUNT_URL": self.service.url,
            "BATCH_AUTH_MODE": "shared_key",
            "BATCH_ACCOUNT_NAME": self.service.account_name,
            "BATCH_ACCOUNT_KEY": self.service.account_key,
            "BATCH_POOLS": f"imagery={POOL}",
            "BATCH_IMAGES": "imagery=haste/imagery:1",
            "BATCH_IDENTITY_RESOURCE_ID": "/subscriptions/s/resourceGroups/r/providers/Microsoft.ManagedIdentity/x",
        }
        context = BackendContext(settings=load_settings(env).backend("azure_batch"), blob_service=self.blobs)
        self.batch: BatchBackend = create(context)
        queues = QueueServiceClient.from_connection_string(connection)  # an Azurite of this run's own
        self.queue = queues.get_queue_client(SUBMIT_QUEUE)
        self.queue.create_queue()
        sender = QueueSender(queues)
        self.turns = order != TODAY
        self.hand_over = order == TURNS
        limits = Limits(seats={"azure_batch": slots}) if self.turns else Limits()
        self.admission = Admission(AdmissionBook(self.blobs.get_container_client(self.container)), limits, sender, _now)
        self.projects: dict[str, str] = {}
        self.handles: dict[str, ComputeJobHandle] = {}
        self.submitted: dict[str, datetime] = {}  # when each job was given to Batch
        self.asked: dict[str, datetime] = {}  # when each job first asked for a seat
        self.seated: dict[str, datetime] = {}  # when each job got its seat
        self.ended: set[str] = set()
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []

    def submit(self, name: str, project: str) -> None:
        """The submit step: a seat first (projects in turn only), then Batch."""
        self.projects[name] = project
        seated = self.admission.seat(name, project, "azure_batch") is None
        self.asked.setdefault(name, _now())  # its place in the book is written
        if seated:
            self.seated.setdefault(name, _now())
            handle = self.batch.submit(_spec(name, project, self.container))
            with self.lock:
                self.handles[name] = handle
                self.submitted[name] = _now()

    def serve(self) -> None:
        """Polling sees ends and frees their seats; the jobs that got one are submitted by the polling
        thread (hand-over), or come back on the submit queue (by message).

        Today's order needs neither: Batch holds every job.
        """
        if not self.turns:
            return
        self.threads = [
            threading.Thread(target=self._receive, daemon=True),
            threading.Thread(target=self._poll, daemon=True),
        ]
        for thread in self.threads:
            thread.start()

    def _receive(self) -> None:
        while not self.stop.is_set():
            for message in self.queue.receive_messages(messages_per_page=32, visibility_timeout=30):
                job_id = JobMessage.model_validate_json(message.content).job_id
                if job_id not in self.handles:
                    self.submit(job_id, self.projects[job_id])
                self.queue.delete_message(message)
            time.sleep(0.02)

    def _poll(self) -> None:
        while not self.stop.is_set():
            with self.lock:
                following = [(name, h) for name, h in self.handles.items() if name not in self.ended]
            for name, handle in following:
                if self.batch.status(handle).state.terminal:
                    self.ended.add(name)
                    # The journal's order (ADR 0039): free the seat, then hand the admitted jobs over after it.
                    admitted = self.admission.free([name], send=not self.hand_over)
                    if self.hand_over:
                        self.admission.hand_over(admitted, self._hand_over)
                    for job_id in admitted:
                        self.seated.setdefault(job_id, _now())
            time.sleep(0.02)

    def _hand_over(self, name: str) -> None:
        self.seated.setdefault(name, _now())  # its seat was written by the change that freed it
        self.submit(name, self.projects[name])

    def started(self, name: str) -> datetime | None:
        handle = self.handles.get(name)
        if handle is None:
            return None
        job = self.service.engine.jobs.get(handle.provider_ids["job_id"])
        task = job.tasks.get(handle.provider_ids["task_id"]) if job else None
        return datetime.fromisoformat(task.start_time) if task and task.start_time else None

    def close(self) -> None:
        """Stop the threads before what they call: a poll after the service and Azurite stop would fail."""
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=60)
        self.service.stop()
        self.batch.close()


def _now() -> datetime:
    return datetime.now(UTC)


def _until(condition: Callable[[], bool], deadline: float, what: str) -> None:
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.02)


def run(order: str, jobs: int, slots: int, connection: str) -> tuple[float, int, int]:
    """(B's wait in s, A's jobs waiting when B joined, of those started before B) for one order."""
    driver = Driver(connection, order, slots)
    try:
        driver.serve()
        burst = [f"a{i:05d}" for i in range(jobs)]
        with ThreadPoolExecutor(SUBMITTERS) as submitters:
            list(submitters.map(lambda name: driver.submit(name, "A"), burst))
        deadline = time.monotonic() + 1800
        _until(
            lambda: sum(driver.started(n) is not None for n in burst) >= slots * 2, deadline, "the burst did not run"
        )
        submitted = _now()
        driver.submit("b", "B")
        _until(lambda: driver.started("b") is not None, deadline, "B's job did not start")
        b_started = driver.started("b")
        assert b_started is not None

        # Waiting when B's job joined the queue: A's jobs that neither ran nor held a slot by then. Batch gives
        # a task its slot as it starts it; the pipeline gives a seat (a slot kept for it) in the book.
        joined = driver.asked["b"]

        def waited(name: str) -> bool:
            started, seated = driver.started(name), driver.seated.get(name)
            return (started is None or started > submitted) and (not driver.turns or seated is None or seated > joined)

        starts = [driver.started(name) for name in burst if waited(name)]
        waiting = len(starts)
        before = sum(1 for at in starts if at is not None and at < b_started)
        return (b_started - submitted).total_seconds(), waiting, before
    finally:
        driver.close()
