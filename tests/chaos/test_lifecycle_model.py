"""The job lifecycle as a model: hypothesis drives one job at a time through the real steps.

Accept, submit, poll (current, stale and future sequence numbers), exit notices, the
provider finishing or failing, cancel, the deadline passing and the reconciler arrive in
any order, duplicated, and two at once on threads; the job store is a real Azurite. Only
the provider is scripted (:class:`ScriptedBackend`: the machine decides when its job ends)
and post-processing is trivial, so a step costs a few storage calls.

After every step the design's promises are checked against the stored document and index:

- the first ending wins and is never overwritten (state, reason, the ending event);
- a cancel that arrives after the provider finished the work still post-processes, and
  the job ends ``succeeded`` (unless its deadline ended it first);
- exactly one terminal event once the job has ended, none before. Job events (CloudEvents)
  are a history of their own when they exist; this is written against the status history;
- the history only grows (every earlier event is still there, in order; folded ones are
  counted), its times never run backwards, and the poll sequence only rises;
- the stored state agrees with the ``active/`` or ``ended/`` index entry (ground truth).

Which rule may run next, and with what, depends only on the model's own record of what it
has done (what it delivered, whether it told the provider to end), never on what the real
system did with it: the deliveries race on threads, so a read of the store or the provider
could answer differently when hypothesis replays the same choices, and hypothesis stops
with ``FlakyStrategyDefinition``. The real system is read in the rule bodies, once the
deliveries' threads have finished (within a bound), and asserted on there.

``make test`` runs a modest number of examples; ``make chaos`` (``CHAOS_JOBS`` of 100) runs
more and longer ones.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from hastegeo.compute.contract import (
    ComputeBackend,
    ComputeJobHandle,
    ComputeJobSpec,
    ComputeState,
    ComputeStatus,
    OutputRead,
)
from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.pipeline.accept import parse_request
from hastegeo.pipeline.exits import ExitHandler
from hastegeo.runtime import Runtime, ensure_storage
from hastegeo.settings.load import load_settings
from hastegeo.store.queues import JobMessage
from hastegeo.utils.errors import ConflictError
from hastegeo.workloads.artifacts.processor import ArtifactsProcessor
from hastegeo.workloads.processor import OutputAccess, PostprocessResult
from hastegeo_dev.devhost.azurite import Azurite
from tests.support.runtime import development_runtime

from . import ground_truth
from .conftest import CHAOS_JOBS, Outcome
from .test_chaos import Clock

pytestmark = [
    pytest.mark.azurite,
    # make chaos runs 100 examples of up to 30 steps: five minutes beside a busy neighbour, which the suite's
    # bound of 300 s would cut mid-example (and hypothesis reports a cut example as FlakyStrategyDefinition).
    pytest.mark.timeout(900),
]
BODY = {"workload": "artifacts", "projectId": "p1", "inputs": [{"blob": "p1/a.txt"}]}
TERMINAL_STATES = frozenset({"succeeded", "failed", "cancelled"})
RUN_DEADLINE_S = 600
DELIVERY_BOUND_S = 120.0  # a delivery's threads finish within this, even beside a busy neighbour
LARGE = CHAOS_JOBS >= 50  # make chaos
# Weighted by repetition: the paths that end a job run more often than those that only look at it.
DELIVERIES = (
    *("submit", "poll", "poll", "exit notice", "exit notice", "stale poll", "early poll"),
    *("cancel", "reconciler", "deadline"),
)
ENDS_BY_ITSELF = frozenset({"cancel", "deadline"})  # may end a job whatever the provider does
LOOKS_AT_THE_PROVIDER = frozenset({"poll", "stale poll", "early poll", "exit notice", "reconciler"})


class ScriptedBackend(ComputeBackend):
    """A provider whose jobs end when the model says so. One provider job per spec name."""

    name: ClassVar[str] = "local"
    status_outlives_cleanup: ClassVar[bool] = True

    def __init__(self, clock: Callable[[], datetime]) -> None:
        self._clock = clock
        self.states: dict[str, ComputeState] = {}
        self._lock = threading.Lock()

    def submit(self, spec: ComputeJobSpec) -> ComputeJobHandle:
        with self._lock:
            self.states.setdefault(spec.name, ComputeState.RUNNING)
        return ComputeJobHandle(
            backend=self.name, provider_ids={"name": spec.name}, output=spec.output, submitted_at=self._clock()
        )

    def finish(self, name: str, state: ComputeState) -> None:
        with self._lock:
            if not self.states[name].terminal:
                self.states[name] = state

    def status(self, handle: ComputeJobHandle) -> ComputeStatus:
        with self._lock:
            state = self.states[handle.provider_ids["name"]]
        return ComputeStatus(
            state=state,
            exit_code=0 if state is ComputeState.SUCCEEDED else 1 if state is ComputeState.FAILED else None,
            reason="the workload failed" if state is ComputeState.FAILED else None,
        )

    def read_output(self, handle: ComputeJobHandle, path: str) -> OutputRead:
        return OutputRead(data=None)

    def cancel(self, handle: ComputeJobHandle) -> None:
        self.finish(handle.provider_ids["name"], ComputeState.CANCELLED)  # a finished job stays as it ended

    def cleanup(self, handle: ComputeJobHandle, unavailable_reason: str | None = None) -> None:
        pass

    def list_active(self) -> list[tuple[str, ComputeJobHandle]]:
        return []


class NoOutputs(ArtifactsProcessor):
    """Post-processing without files: the model is about the lifecycle, not the manifest."""

    def postprocess(self, job: Job, access: OutputAccess, output: Any) -> PostprocessResult:
        return PostprocessResult(outputs=[], summary={"model": True})


@pytest.fixture
def model_runtime(tmp_path: Path) -> Iterator[tuple[Runtime, Clock, ScriptedBackend]]:
    """A runtime on an Azurite of its own: the reconciler sweeps every job of the account, and the
    steps send messages nobody consumes, which must not reach other tests' queues."""
    with Azurite(in_memory=True) as azurite:
        yield from _model_runtime(azurite, tmp_path)


def _model_runtime(azurite: Azurite, tmp_path: Path) -> Iterator[tuple[Runtime, Clock, ScriptedBackend]]:
    clock = Clock()
    env = {
        "AzureWebJobsStorage": azurite.connection_string,
        "HASTE_LOCAL_ROOT": str(tmp_path / "local"),
        "HASTE_RUN_DEADLINE_S": str(RUN_DEADLINE_S),
        "HASTE_POLL_INITIAL_S": "1",
    }
    runtime = development_runtime(load_settings(env), clock=clock, sleep=lambda seconds: None)
    ensure_storage(runtime.settings)
    backend = ScriptedBackend(clock)
    runtime.registry._instances["local"] = backend  # the provider is the model's; everything else is real
    runtime.deps.processors["artifacts"] = NoOutputs()  # this runtime's own (the registered one is shared)
    runtime.blobs.get_container_client(runtime.settings.storage.inputs_container).upload_blob("p1/a.txt", b"alpha")
    yield runtime, clock, backend
    for adapter in runtime.registry.built().values():
        adapter.close()


def terminal_events(job: Job) -> list[str]:
    return [event.message for event in job.history if event.state.value in TERMINAL_STATES]


def lifecycle_machine(runtime: Runtime, clock: Clock, backend: ScriptedBackend) -> type[RuleBasedStateMachine]:
    exits = ExitHandler(runtime.poll.handle, lambda message: None)

    class Lifecycle(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.job_id = runtime.acceptor.accept(parse_request(BODY)).job.id
            self.seen: list[Job] = [runtime.store.get(self.job_id)]
            self.first_ending: tuple[str, str | None, str] | None = None
            self.cancel_after_success = False
            self.expired = False
            # The model's own state: set from its choices alone, and all its preconditions read.
            self.submit_sent = False  # a submit message was delivered
            self.provider_told = False  # the provider was told to end the job (if it had it)
            self.ending_sent = False  # a delivery was made that may have ended the job
            self.late_endings = 0  # what the real system let happen: for reports, never for a choice

        # -- what can happen ---------------------------------------------------------------

        @property
        def job(self) -> Job:
            return self.seen[-1]

        @property
        def provider(self) -> str:
            return f"haste-{self.job_id}"

        def deliver(self, steps: list[Callable[[], None]]) -> None:
            """Run the steps at once on threads (one step: here), as two hosts would; return once all have
            finished (every step is synchronous, so the real system has then caught up with them)."""
            errors: list[BaseException] = []

            def guarded(step: Callable[[], None]) -> None:
                try:
                    step()
                except ConflictError:
                    pass  # a refused cancel, or a document that kept changing: the caller retries
                except BaseException as exc:  # reported below, on the test's thread
                    errors.append(exc)

            if len(steps) == 1:
                guarded(steps[0])
            else:
                threads = [threading.Thread(target=guarded, args=(step,)) for step in steps]
                for thread in threads:
                    thread.start()
                deadline = time.monotonic() + DELIVERY_BOUND_S
                for thread in threads:
                    thread.join(max(0.0, deadline - time.monotonic()))
                late = [thread.name for thread in threads if thread.is_alive()]
                assert not late, f"deliveries still running after {DELIVERY_BOUND_S:g}s: {late}"
            if errors:
                raise errors[0]

        def step(self, kind: str) -> Callable[[], None]:
            """One delivery of ``kind``: a queue message, an exit notice, a cancel request or a sweep."""
            job_id = self.job_id
            if kind == "submit":
                return lambda: runtime.submit.handle(JobMessage(job_id=job_id, kind="submit"))
            if kind == "exit notice":
                return lambda: exits.run(job_id)
            if kind == "cancel":
                return lambda: runtime.cancel.cancel(job_id)
            if kind == "reconciler":
                return lambda: runtime.reconcile.run()
            offset = {"poll": 0, "stale poll": -1, "early poll": 1}[kind]
            seq = max(0, runtime.store.get(job_id).poll_seq + offset)
            return lambda: runtime.poll.handle(JobMessage(job_id=job_id, kind="poll", poll_seq=seq))

        @initialize(submitted=st.sampled_from([True, True, True, False]))
        def accept(self, submitted: bool) -> None:
            """Most jobs get their submit message first; some meet the rest while still queued."""
            if submitted:
                self.submit_sent = True
                self.deliver([self.step("submit")])

        @rule(kinds=st.lists(st.sampled_from(DELIVERIES), min_size=2, max_size=3))
        def deliveries(self, kinds: list[str]) -> None:
            """Two or three deliveries at once (a duplicate is the same kind twice), as several hosts would;
            the deadline, when it is among them, passes first."""
            self.submit_sent |= "submit" in kinds
            self.ending_sent |= bool(ENDS_BY_ITSELF.intersection(kinds))
            self.ending_sent |= self.provider_told and bool(LOOKS_AT_THE_PROVIDER.intersection(kinds))
            if "deadline" in kinds:
                kinds = [kind for kind in kinds if kind != "deadline"]
                self.deadline_passes()
            if "cancel" in kinds:
                current = runtime.store.get(self.job_id)
                finished = backend.states.get(self.provider) is ComputeState.SUCCEEDED
                if finished and not current.state.terminal and not self.expired:
                    self.cancel_after_success = True
            self.deliver([self.step(kind) for kind in kinds])

        @precondition(lambda self: self.submit_sent)
        @rule(ending=st.sampled_from([ComputeState.SUCCEEDED, ComputeState.SUCCEEDED, ComputeState.FAILED]))
        def provider_ends(self, ending: ComputeState) -> None:
            """The provider's job ends, when a submit got the job there. A submit that lost to a cancel or
            the deadline never reached the provider: then the stored job names no provider job either."""
            self.provider_told = True
            if self.provider in backend.states:
                backend.finish(self.provider, ending)
            else:
                job = runtime.store.get(self.job_id)
                assert job.handle is None, f"the job names a provider job the provider never had ({job.state})"

        @precondition(lambda self: self.ending_sent)
        @rule()
        def late_ending(self) -> None:
            """A step that decided to end the job from a read taken before another step ended it (two hosts
            racing do this all the time); its write must find the job ended and change nothing.

            Chosen once a delivery may have ended the job; whether one did is read here."""
            if not runtime.store.get(self.job_id).state.terminal:
                return  # nothing ended it (a cancel refused, a poll that found it running): not late
            wrote = runtime.journal.end(
                self.job_id, JobState.FAILED, "failed: too late", source="model", reason="too late"
            )
            assert not wrote, "a late ending was written over the first"
            self.late_endings += 1

        def deadline_passes(self) -> None:
            clock.advance(RUN_DEADLINE_S + 3600)
            if not runtime.store.get(self.job_id).state.terminal:
                self.expired = True

        # -- what must hold after every step -------------------------------------------------

        @invariant()
        def promises(self) -> None:
            job = runtime.store.get(self.job_id)
            before = self.job
            self.seen.append(job)
            # History only grows: every earlier event is still there, in order (or folded and counted).
            assert len(job.history) + job.history_folded >= len(before.history) + before.history_folded
            if not job.history_folded:
                remaining = iter(job.history)
                assert all(event in remaining for event in before.history), "an earlier event went missing"
            assert all(a.at <= b.at for a, b in zip(job.history, job.history[1:], strict=False)), "time ran backwards"
            assert job.poll_seq >= before.poll_seq, "the poll sequence went down"
            endings = terminal_events(job)
            if job.state.terminal:
                assert len(endings) == 1, endings
                ending = (job.state.value, job.reason, endings[0])
                if self.first_ending is None:
                    self.first_ending = ending
                assert ending == self.first_ending, f"the first ending {self.first_ending} was overwritten by {ending}"
            else:
                assert not endings, endings
                assert self.first_ending is None, f"{self.first_ending} was undone: the job is {job.state.value}"
            if self.cancel_after_success and job.state.terminal and not self.expired:
                assert job.state.value == "succeeded", (job.state, job.reason)

        def teardown(self) -> None:
            outcome = Outcome("lifecycle model")
            ground_truth.check(outcome, ground_truth.Scene(runtime.blobs, runtime.settings.storage.jobs_container))
            assert outcome.truth["store"] == 0, outcome.notes

    return Lifecycle


def test_the_lifecycle_keeps_its_promises_under_any_order_of_deliveries(
    model_runtime: tuple[Runtime, Clock, ScriptedBackend],
) -> None:
    runtime, clock, backend = model_runtime
    run_state_machine_as_test(
        lifecycle_machine(runtime, clock, backend),
        settings=settings(
            max_examples=100 if LARGE else 10,
            stateful_step_count=30 if LARGE else 8,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
            # Threads race: a replay may take another interleaving, so a failure is reported as found.
            phases=[Phase.explicit, Phase.reuse, Phase.generate],
        ),
    )


def test_a_second_ending_changes_nothing(model_runtime: tuple[Runtime, Clock, ScriptedBackend]) -> None:
    """The model's own steps, in one fixed order that always reaches the guard against a second ending
    (``PipelineDeps.end_job``): without it this fails every time, whatever the generated runs find."""
    runtime, clock, backend = model_runtime
    machine = lifecycle_machine(runtime, clock, backend)()
    machine.accept(submitted=True)
    machine.promises()
    machine.provider_ends(ComputeState.FAILED)
    machine.deliveries(["poll", "exit notice"])
    machine.promises()
    assert runtime.store.get(machine.job_id).state is JobState.FAILED
    machine.late_ending()
    assert machine.late_endings == 1
    machine.promises()
    machine.teardown()
