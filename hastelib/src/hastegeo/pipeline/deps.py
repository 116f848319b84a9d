"""What every pipeline step is given: settings, the store to read, the journal to write, and the backends.

Reads go to :attr:`PipelineDeps.store`; every change of a job goes through
:attr:`PipelineDeps.journal` (:mod:`hastegeo.pipeline.journal`), and every provider call
through :attr:`PipelineDeps.service`. Nothing here writes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from hastegeo.compute.contract import BlobLocation, ComputeJobHandle
from hastegeo.compute.router import ComputeRouter
from hastegeo.compute.service import ExecutionService
from hastegeo.costs.pricer import Pricer
from hastegeo.models.job import Job
from hastegeo.models.moves import record
from hastegeo.models.paths import job_prefix
from hastegeo.models.states import JobState
from hastegeo.pipeline.admission import Admission
from hastegeo.pipeline.budget import Budgets
from hastegeo.pipeline.chain import PollChain
from hastegeo.pipeline.journal import JobJournal
from hastegeo.settings.app import Settings
from hastegeo.store.groups import GroupStore
from hastegeo.store.jobs import JobStore, Versioned
from hastegeo.store.queues import JobMessage, QueueSender
from hastegeo.telemetry import tracer
from hastegeo.telemetry.logs import job_fields
from hastegeo.utils.errors import JobNotFoundError, describe_exception
from hastegeo.workloads.processor import Processor, SpecInputs

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PipelineDeps:
    settings: Settings
    store: JobStore  # reads; writes go through the journal
    journal: JobJournal
    queues: QueueSender
    chain: PollChain
    router: ComputeRouter
    service: ExecutionService
    processors: dict[str, Processor]
    clock: Callable[[], datetime]
    admission: Admission | None = None  # seats before a provider (ADR 0032); None: no limits
    groups: GroupStore | None = None  # groups and dependency entries (ADR 0040)
    budgets: Budgets | None = None  # projects' monthly budgets (docs/adr/0042); None: not kept
    pricer: Pricer | None = None  # what prices a job's runs (docs/adr/0038)

    @property
    def spec_inputs(self) -> SpecInputs:
        return SpecInputs(
            inputs_container=self.settings.storage.inputs_container,
            outputs_container=self.settings.storage.outputs_container,
            project_of=self.project_of,
            checkpoint_interval_s=self.settings.pipeline.checkpoint_interval_s,
        )

    def project_of(self, job_id: str) -> str | None:
        """The project of job ``job_id``, or None when there is no such job."""
        job = self.store.find(job_id)
        return None if job is None else job.project_id

    def output_location(self, job_id: str) -> BlobLocation:
        return BlobLocation(container=self.settings.storage.outputs_container, path=job_prefix(job_id))

    def event(
        self,
        job: Job,
        message: str,
        source: str,
        state: JobState | None = None,
        *,
        at: datetime | None = None,
        **fields: Any,
    ) -> Job:
        """:func:`~hastegeo.models.moves.record` with this pipeline's history limit, at ``at`` (a step's start)
        or now: the value a change function returns, written by the journal."""
        limit = self.settings.pipeline.history_limit
        return record(job, now=at or self.clock(), limit=limit, message=message, source=source, state=state, **fields)

    def cancel_provider(self, handle: ComputeJobHandle, job: Job | str, retried_by: str) -> None:
        """Ask the provider to stop the job of ``handle`` (``job``, or its id); a failure is logged, never raised.

        Every caller has someone who tries again (``retried_by``, quoted in the warning): the
        next poll, or the reconciler's orphan sweep. Any exception is contained, not only the
        contract's: a failed cancel must not undo the write that made it necessary.
        """
        try:
            self.service.cancel(handle)
        except Exception as exc:
            fields = job_fields(job) if isinstance(job, Job) else job_fields(job_id=job, backend=handle.backend)
            job_id = job.id if isinstance(job, Job) else job
            log.warning(
                "cancel of %s on %s failed, %s tries again: %s",
                job_id,
                handle.backend,
                retried_by,
                describe_exception(exc),
                extra=fields,
            )

    @contextmanager
    def step(
        self, name: str, message: JobMessage, attributes: Mapping[str, Any] | None = None
    ) -> Iterator[Versioned | None]:
        """The step's span in the job's trace, and the job as stored with its ETag (None: no such job).

        The span is the child of the message's ``traceparent``. A message without one (a
        nudge, a message the reconciler re-sent, one sent while tracing was off) continues
        the job's own trace, taken from the read the step needs anyway: that read happens
        untraced, before the span, instead of a second read only to find the trace.
        """
        version: Versioned | None = None
        parent = message.traceparent
        if not parent:
            with tracer.untraced():
                version = self._read(message.job_id)
            parent = None if version is None else version.job.trace_parent
        with tracer.step_span(name, traceparent=parent, job_id=message.job_id, attributes=attributes):
            if message.traceparent:
                version = self._read(message.job_id)
            yield version

    def _read(self, job_id: str) -> Versioned | None:
        try:
            return self.store.read(job_id)
        except JobNotFoundError:
            return None
