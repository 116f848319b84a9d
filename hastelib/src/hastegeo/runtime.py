"""The composition root: build every part of the pipeline from settings, once per process.

The Functions code calls :func:`get_runtime`; tests call :func:`build_runtime`
with their own settings. Nothing else constructs clients.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from datetime import datetime
from typing import Any

from azure.core.exceptions import ResourceExistsError
from azure.storage.blob import BlobServiceClient, ExponentialRetry, LinearRetry
from azure.storage.queue import QueueServiceClient

from hastegeo.compute.catalog import descriptors
from hastegeo.compute.context import BackendContext, utc_now
from hastegeo.compute.descriptor import BackendFactory
from hastegeo.compute.registry import BackendRegistry
from hastegeo.compute.router import ComputeRouter, RouteCandidate
from hastegeo.compute.service import ExecutionService
from hastegeo.costs.pricer import Pricer
from hastegeo.costs.prices import blob_reader
from hastegeo.events.eventgrid import EventGridTopic
from hastegeo.events.publish import EventPublisher
from hastegeo.pipeline.accept import JobAcceptor
from hastegeo.pipeline.admission import Admission, limits_of
from hastegeo.pipeline.admission.board import CapacityBoard
from hastegeo.pipeline.admission.book import AdmissionBook
from hastegeo.pipeline.budget import Budgets
from hastegeo.pipeline.cancel import CancelStep
from hastegeo.pipeline.chain import PollChain
from hastegeo.pipeline.deps import PipelineDeps
from hastegeo.pipeline.exits import ExitChannel, ExitHandler
from hastegeo.pipeline.finish import FinishStep
from hastegeo.pipeline.group_poison import GroupPoisonStep
from hastegeo.pipeline.groups import GroupSteps
from hastegeo.pipeline.journal import JobJournal
from hastegeo.pipeline.poison import PoisonStep
from hastegeo.pipeline.poll import PollStep
from hastegeo.pipeline.provider_events import ProviderEvents
from hastegeo.pipeline.reconcile import ReconcileStep
from hastegeo.pipeline.rerun import Rerun
from hastegeo.pipeline.submit import SubmitStep
from hastegeo.pipeline.totals import CostTotals
from hastegeo.pipeline.upstream import UpstreamStep
from hastegeo.settings.app import Settings
from hastegeo.settings.load import get_settings
from hastegeo.store.groups import GroupStore
from hastegeo.store.jobs import JobStore
from hastegeo.store.queues import ALL_QUEUES, EVENTS_QUEUE, POISON_SUFFIX, POLL_QUEUE, JobMessage, QueueSender
from hastegeo.telemetry import tracer
from hastegeo.telemetry.configure import configure_telemetry
from hastegeo.utils.ratelimit import TokenBucket
from hastegeo.utils.transport import transport_options
from hastegeo.workloads.processor import processors
from hastegeo.workloads.registry import workload_names

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StorageBudget:
    """How long one storage call may take, retries included, and one listing's document reads.

    The pipeline's queue steps keep the SDK's patient defaults (a redelivered message
    would cost a dequeue); HTTP handlers use this budget, so a storage outage answers
    503 with ``Retry-After`` in seconds instead of after minutes of SDK retries.
    Worst case of one call: ``(retries + 1) * (connect + read) + retries * backoff``.
    """

    connect_timeout_s: float = 2.0
    read_timeout_s: float = 3.0
    retries: int = 1
    backoff_s: int = 1
    listing_deadline_s: float = 10.0

    def client_options(self) -> dict[str, Any]:
        return {
            "connection_timeout": self.connect_timeout_s,
            "read_timeout": self.read_timeout_s,
            "retry_policy": LinearRetry(backoff=self.backoff_s, retry_total=self.retries, random_jitter_range=0),
        }


API_STORAGE_BUDGET = StorageBudget()


@dataclass(frozen=True)
class Pipeline:
    """One pipeline over one set of storage clients: the steps, and the parts they share."""

    settings: Settings
    blobs: BlobServiceClient
    queues: QueueSender
    store: JobStore  # reads
    journal: JobJournal  # every change of a job
    deps: PipelineDeps
    acceptor: JobAcceptor
    submit: SubmitStep
    poll: PollStep  # follows a job, and hands it to finishing once it ended
    cancel: CancelStep
    poison: PoisonStep
    upstream: UpstreamStep
    reconcile: ReconcileStep
    retry: Rerun
    board: CapacityBoard  # each backend's queue, as the reconciler last saw it
    groups: GroupSteps  # job groups, and the journal's followers step (ADR 0040)
    group_poison: GroupPoisonStep  # what a groups message given up on loses; a release is re-armed (ADR 0047)


@dataclass(frozen=True)
class Runtime(Pipeline):
    """The worker's pipeline, with the backends it drives and the API's own pipeline (:class:`StorageBudget`)."""

    registry: BackendRegistry
    submit_limiter: TokenBucket
    api: Pipeline
    provider_events: ProviderEvents  # providers' own "this job ended", as nudges (ADR 0048)


def storage_clients(
    settings: Settings, budget: StorageBudget | None = None
) -> tuple[BlobServiceClient, QueueServiceClient]:
    """Blob and queue clients; with ``budget``, every call is bounded by it (the SDK's defaults otherwise)."""
    storage = settings.storage

    def options() -> dict[str, Any]:  # one client's: each owns its HTTP session
        return {**client_options(), **(budget.client_options() if budget is not None else {})}

    if storage.connection_string:
        return (
            BlobServiceClient.from_connection_string(storage.connection_string, **options()),
            QueueServiceClient.from_connection_string(storage.connection_string, **options()),
        )
    from azure.identity import DefaultAzureCredential

    credential = DefaultAzureCredential()
    account = storage.account_name
    return (
        BlobServiceClient(f"https://{account}.blob.core.windows.net", credential=credential, **options()),
        QueueServiceClient(f"https://{account}.queue.core.windows.net", credential=credential, **options()),
    )


def client_options() -> dict[str, Any]:
    """What every storage client of the app is built with: a call is one span when traced, without
    its HTTP request's (docs/adr/0012), and the transport reads the environment once."""
    return {**tracer.STORAGE_CLIENT_OPTIONS, **transport_options(os.environ)}


def transfer_retry() -> ExponentialRetry:
    """The one retry policy of staging inputs and uploading outputs (the local backend's transfers).

    Waits of about 1, 3, 5, 9 and 17 seconds (±1) between tries, then the call
    gives up: an outage of half a minute costs nothing, and a longer one
    fails the step transiently instead of holding its thread for minutes
    (the SDK's default waits 15 s before its first retry).
    """
    return ExponentialRetry(retry_total=5, initial_backoff=1, increment_base=2, random_jitter_range=1)


def transfer_client(blobs: BlobServiceClient, retry: ExponentialRetry | None = None) -> BlobServiceClient:
    """A client for the same account as ``blobs`` whose only retry policy is ``retry`` (:func:`transfer_retry`)."""
    return BlobServiceClient(
        account_url=blobs.url, credential=blobs.credential, retry_policy=retry or transfer_retry(), **client_options()
    )


def build_runtime(
    settings: Settings,
    *,
    factories: dict[str, BackendFactory] | None = None,
    clock: Callable[[], datetime] = utc_now,
    sleep: Callable[[float], None] = time.sleep,
    api_budget: StorageBudget = API_STORAGE_BUDGET,
    inline_exits: bool = False,
) -> Runtime:
    """Build the worker's pipeline, the backends it drives, and the API's pipeline over the same backends.

    ``factories`` overrides adapter factories by backend name (tests). ``api_budget`` bounds the
    storage calls HTTP handlers make. ``inline_exits``: a workload exit the local backend sees is
    handled in this process at once (:mod:`hastegeo.pipeline.exits`; the Functions app's runtime
    does this); otherwise it becomes a ``nudge`` message, which a test driving the steps one by one
    delivers itself. Storage resources are not created here: IaC makes them in Azure, and the
    development stack with :func:`ensure_storage` (ADR 0039).
    """
    configure_telemetry(settings.telemetry.export)  # before any client exists: their calls become spans
    blobs, queue_service = storage_clients(settings)
    queues = QueueSender(queue_service)
    exits = ExitChannel()  # taken by the poll step once it is built (the backends it drives come first)

    def nudge(message: JobMessage) -> None:
        queues.send(POLL_QUEUE, message)

    notify_exit = exits.post if inline_exits else (lambda job_id: nudge(JobMessage(job_id=job_id, kind="nudge")))
    registry, router = build_backends(settings, blobs, notify_exit, factories or {}, clock, sleep)
    service = ExecutionService(registry, blobs)
    topic = event_topic(settings)
    worker = build_pipeline(settings, blobs, queues, router=router, service=service, clock=clock, topic=topic)
    api_blobs, api_queues = storage_clients(settings, api_budget)
    api = build_pipeline(
        settings,
        api_blobs,
        QueueSender(api_queues),
        router=router,
        service=service,
        clock=clock,
        topic=topic,
        read_deadline_s=api_budget.listing_deadline_s,
    )
    look_now = ExitHandler(poll=worker.poll.handle, fallback=nudge)
    if inline_exits:
        look_now.serve(exits)
    readers = {
        name: descriptor.ended_jobs
        for name, descriptor in descriptors().items()
        if descriptor.ended_jobs is not None and name in settings.routing.enabled_backends
    }
    parts = {f.name: getattr(worker, f.name) for f in fields(Pipeline)}
    return Runtime(
        **parts,
        registry=registry,
        submit_limiter=TokenBucket(settings.pipeline.submit_rate_per_s, settings.pipeline.submit_burst),
        api=api,
        provider_events=ProviderEvents(readers, look_now),
    )


def build_backends(
    settings: Settings,
    blobs: BlobServiceClient,
    notify_exit: Callable[[str], None],
    factories: dict[str, BackendFactory],
    clock: Callable[[], datetime],
    sleep: Callable[[float], None],
) -> tuple[BackendRegistry, ComputeRouter]:
    """The backends the settings enable (built on first use) and the router that chooses among them."""
    transfer_blobs = transfer_client(blobs)
    contexts = {
        name: BackendContext(
            settings=section,
            blob_service=blobs,
            transfer_blobs=transfer_blobs,
            notify_exit=notify_exit,
            clock=clock,
            sleep=sleep,
            project_limit=settings.capacity.project_limit(name),
        )
        for name, section in settings.backends.items()
    }
    known = {
        name: replace(descriptor, factory=factories.get(name, descriptor.factory))
        for name, descriptor in descriptors().items()
    }
    registry = BackendRegistry(known.values(), enabled=settings.routing.enabled_backends, contexts=contexts)
    router = ComputeRouter(
        {
            name: RouteCandidate(
                name=name,
                workloads=settings.backends[name].workloads(workload_names()),
                weight=settings.routing.weights.get(name, 1.0),
                unable=settings.backends[name].limits(workload_names()),
                profiles={
                    profile.name: profile.workloads
                    for profile in settings.backends[name].profiles(workload_names()).values()
                },
            )
            for name in settings.routing.enabled_backends
        }
    )
    for candidate in router.candidates.values():
        if candidate.takes_nothing_because:  # enabled, yet no job can go there: say so at start-up
            log.warning("backend %s takes no job: %s", candidate.name, candidate.takes_nothing_because)
    return registry, router


def pricer(settings: Settings, blobs: BlobServiceClient) -> Pricer:
    """What prices an ended job: the table ``HASTE_PRICES_BLOB`` names (or the shipped one), read on first use."""
    costs = settings.costs
    return Pricer(costs.prices_blob, blob_reader(blobs), local_rate=costs.local_price_per_slot_hour)


def build_pipeline(
    settings: Settings,
    blobs: BlobServiceClient,
    queues: QueueSender,
    *,
    router: ComputeRouter,
    service: ExecutionService,
    clock: Callable[[], datetime],
    topic: EventGridTopic | None,
    read_deadline_s: float | None = None,
) -> Pipeline:
    """One pipeline over ``blobs`` and ``queues``: the worker's, or the API's (whose handlers use a few steps).

    A seat freed by the poll step's writes goes to the next job in turn in that step (``submit.seated``);
    the API's writes free seats too, and send the jobs that get them as messages (an HTTP request never
    submits to a provider).
    """
    jobs = blobs.get_container_client(settings.storage.jobs_container)
    admission = Admission(AdmissionBook(jobs), limits_of(settings), queues, clock)  # ADR 0032
    seats = admission if admission.active else None
    store = JobStore(jobs, read_deadline_s=read_deadline_s)
    publisher = EventPublisher(queues, topic)
    prices = pricer(settings, blobs)  # docs/adr/0038
    budgets = Budgets(jobs, settings.costs, clock=clock, currency=prices.currency, send=publisher.send)  # ADR 0042
    journal = JobJournal(
        store,
        clock=clock,
        history_limit=settings.pipeline.history_limit,
        publish=publisher,
        admission=seats,
        price=prices.cost,
        totals=CostTotals(jobs, budget_of=budgets.budget, levels=budgets.levels, crossed=budgets.crossed),
    )
    deps = PipelineDeps(
        settings=settings,
        store=store,
        journal=journal,
        queues=queues,
        chain=PollChain(queues, settings.pipeline, clock, settings.poll_max_s),
        router=router,
        service=service,
        processors=processors(),
        clock=clock,
        admission=seats,
        groups=GroupStore(jobs),
        budgets=budgets,
        pricer=prices,
    )
    acceptor = JobAcceptor(deps)
    cancel = CancelStep(deps)
    groups = GroupSteps(deps, acceptor, cancel, publisher)
    journal.followers = groups
    submit = SubmitStep(deps)
    board = CapacityBoard(jobs)
    return Pipeline(
        settings=settings,
        blobs=blobs,
        queues=queues,
        store=store,
        journal=journal,
        deps=deps,
        acceptor=acceptor,
        submit=submit,
        poll=PollStep(deps, FinishStep(deps, acceptor, submit.seated)),
        cancel=cancel,
        poison=PoisonStep(deps),
        upstream=UpstreamStep(deps, acceptor, groups),
        reconcile=ReconcileStep(deps, board),
        retry=Rerun(deps, acceptor),
        board=board,
        groups=groups,
        group_poison=GroupPoisonStep(deps),
    )


def event_topic(settings: Settings) -> EventGridTopic | None:
    """The Event Grid topic that receives the job events too, when one is configured (the app's identity)."""
    endpoint = settings.events.eventgrid_endpoint
    if not endpoint:
        return None
    from azure.identity import DefaultAzureCredential

    return EventGridTopic(endpoint, DefaultAzureCredential())


def ensure_storage(settings: Settings) -> None:
    """Create the containers and queues these settings name: what IaC does in Azure, for the development
    stack and the tests (Azurite starts empty). The deployed app never calls it (ADR 0039)."""
    blobs, queue_service = storage_clients(settings)
    _ensure(blobs, QueueSender(queue_service), settings)


def _ensure(blobs: BlobServiceClient, queues: QueueSender, settings: Settings) -> None:
    """Create containers and queues if missing."""
    storage = settings.storage
    for name in {storage.jobs_container, storage.outputs_container, storage.inputs_container}:
        with contextlib.suppress(ResourceExistsError):
            blobs.create_container(name)
    for queue in (*ALL_QUEUES, *(name + POISON_SUFFIX for name in ALL_QUEUES), EVENTS_QUEUE):
        queues.create(queue)


_runtime: Runtime | None = None
_lock = threading.Lock()


def get_runtime() -> Runtime:
    """The process-wide runtime, built on first use from the environment."""
    global _runtime
    with _lock:
        if _runtime is None:
            _runtime = build_runtime(get_settings(), inline_exits=True)
        return _runtime


def reset_runtime() -> None:
    """Forget the process-wide runtime (tests, and the development host on restart)."""
    global _runtime
    with _lock:
        _runtime = None
