"""Job groups (ADR 0040): accept one request for many jobs, make its items in bounded chunks, follow them.

- :meth:`GroupSteps.accept` validates every item (a 400 names ``items[17].parameters.x``),
  stores the request and the group document, then sends one ``make`` message. Nothing else:
  it answers as fast for 10,000 items as for one.
- :meth:`GroupSteps.handle` (queue ``groups-make``) makes the chunk of :data:`CHUNK` items a
  message names into ordinary jobs (:class:`hastegeo.pipeline.accept.JobAcceptor`, so admission,
  fair share, events and history are a job's), sends the next chunk's message, then marks the
  chunk made. Item ids come from the group id, the index and the item's attempt, so a chunk made
  again after a host died stores nothing twice (its accept replays the stored job).
- :meth:`GroupSteps.after_write` is the journal's followers step: it writes an item's new state
  into its group (one mark per item: repeating it counts nothing twice; the marks one process makes for
  a group meanwhile join one write, :mod:`hastegeo.pipeline.group_commit`), announces a group whose
  last item ended (``com.haste.group.completed``) and releases the jobs waiting for a job or group
  that ended (:mod:`hastegeo.pipeline.after`; many of them a chunk per ``release`` message, on the same
  queue). :meth:`GroupSteps.repair` is the reconciler's.
"""

from __future__ import annotations

import contextlib
import logging
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

from azure.core.exceptions import AzureError
from pydantic import ValidationError

from hastegeo.events import group_event
from hastegeo.events.publish import EventPublisher
from hastegeo.models.group import (
    MARKS,
    NOT_MADE,
    Failure,
    Group,
    GroupRequest,
    completes,
    keyed_group_id,
    new_group_id,
)
from hastegeo.models.job import Job, Submitter
from hastegeo.models.params import error_pairs, first_error
from hastegeo.models.states import JobState
from hastegeo.pipeline.accept import (
    GroupSlot,
    JobAcceptor,
    RequestRejected,
    check_body,
)
from hastegeo.pipeline.after import Dependencies
from hastegeo.pipeline.cancel import CancelStep
from hastegeo.pipeline.deps import PipelineDeps
from hastegeo.pipeline.group_commit import GroupCommit, Outcome
from hastegeo.profiles import DEFAULT_PROFILE
from hastegeo.store.groups import GroupStore
from hastegeo.store.queues import GROUPS_QUEUE, GroupMessage
from hastegeo.utils.errors import ConflictError, HasteError, InvalidJobError, JobNotFoundError

log = logging.getLogger(__name__)
CHUNK = 100  # items made (or cancelled) per message: bounded time and storage calls per delivery
ERRORS_SHOWN = 50
QUIET_S = 60.0  # a group with unmade items quiet this long lost its make message: the reconciler sends it again
# A cancelled group with items still queued or running this long after its cancel was sent may have lost a chunk
# of it (a message the host gave up on): the reconciler sends the cancel again. Long enough for a provider to stop
# what it was asked to (repeating the request asks each item's provider again).
CANCEL_AGAIN_S = 300.0


def parse_group(body: Any) -> GroupRequest:
    """Validate a decoded JSON body as a :class:`GroupRequest` (the shape; items' parameters: :meth:`GroupSteps.check`).

    Raises RequestRejected naming each invalid field's path.
    """
    check_body(body, "a group request", ERRORS_SHOWN)
    try:
        return GroupRequest.model_validate(dict(body))
    except ValidationError as exc:
        errors = [(path[:200], message[:300]) for path, message in error_pairs(exc)[:ERRORS_SHOWN]]
        raise RequestRejected("The group request is invalid", errors) from None


class GroupSteps:
    def __init__(
        self, deps: PipelineDeps, acceptor: JobAcceptor, cancel: CancelStep, publish: EventPublisher | None
    ) -> None:
        assert deps.groups is not None
        self._deps = deps
        self._groups: GroupStore = deps.groups
        self._acceptor = acceptor
        self._cancel = cancel
        self._publish = publish
        self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="group-items")
        self._commit: GroupCommit[Group] = GroupCommit(self._groups.update)  # marks of one group join one write

    # -- accepting -----------------------------------------------------------------------

    def check(self, request: GroupRequest) -> None:
        """Every item a valid job request of its workload, every ``after`` a job or group of the project.

        Raises:
            RequestRejected: each invalid item field (``items[17].parameters.x``), at most 50.
            BackendUnavailableError: the backend cannot take the workload.
        """
        deps = self._deps
        processor = deps.processors.get(request.workload)
        if processor is None:
            raise RequestRejected("The group request is invalid", [("workload", "is not available")])
        backend = request.backend or deps.settings.routing.default_backend
        try:
            deps.router.resolve(backend, request.workload, "g", request.profile or DEFAULT_PROFILE)
        except InvalidJobError as exc:  # the backend, or the profile, cannot take the workload
            field = exc.field or "backend"
            reason = str(exc).removeprefix(f"{field}: ")
            raise RequestRejected("The group request is invalid", [(field, reason)]) from None
        errors: list[tuple[str, str]] = []
        for index in range(len(request.items)):
            where = f"items[{index}]"
            try:
                item = request.item_request(index)
                processor.validate(item)
                if item.profile != request.profile:  # the group's own was checked above
                    deps.router.resolve(backend, request.workload, "g", item.profile or DEFAULT_PROFILE)
            except ValidationError as exc:
                path, message = first_error(exc)
                errors.append((f"{where}.{path}", message))
            except InvalidJobError as exc:
                field = exc.field or ""
                errors.append((f"{where}.{field}" if field else where, str(exc).removeprefix(f"{field}: ")))
            if len(errors) >= ERRORS_SHOWN:
                break
        after = Dependencies(deps)
        try:
            after.resolve(request.project_id, request.after)
            for index, item_ in enumerate(request.items):
                after.resolve(request.project_id, item_.after, field=f"items[{index}].after")
        except InvalidJobError as exc:
            errors.append((exc.field or "after", str(exc)))
        if errors:
            raise RequestRejected("The group request is invalid", errors)

    def accept(
        self,
        request: GroupRequest,
        *,
        idempotency_key: str | None = None,
        submitter: Submitter | None = None,
        source: str = "api",
    ) -> tuple[Group, bool]:
        """Store the group (then send its first ``make`` message); the group and whether this call created it.

        Raises RequestRejected, BackendUnavailableError, ConflictError (the key was used for another request).
        """
        fingerprint = request.fingerprint()
        group_id = keyed_group_id(request.project_id, idempotency_key) if idempotency_key else new_group_id()
        if idempotency_key:
            existing = self._groups.find(group_id)
            if existing is not None:
                return self._replay(existing, fingerprint), False
        self.check(request)
        now = self._deps.clock()
        group = Group(
            id=group_id,
            project_id=request.project_id,
            workload=request.workload,
            item_count=len(request.items),
            marks=NOT_MADE * len(request.items),
            created_at=now,
            updated_at=now,
            submitted_by=submitter,
            correlation_id=request.correlation_id,
            request_fingerprint=fingerprint,
            request_key=idempotency_key,
        )
        stored = self._groups.create(group, request)
        if stored is None:
            return self._replay(self._groups.get(group_id), fingerprint), False
        self._send(GroupMessage(group_id=group_id))
        log.info("accepted group %s of %d %s items (from %s)", group_id, group.item_count, request.workload, source)
        return stored, True

    def _replay(self, existing: Group, fingerprint: str) -> Group:
        if existing.request_fingerprint != fingerprint:
            raise ConflictError("This Idempotency-Key was already used for a different request")
        return existing

    def _send(self, message: GroupMessage) -> None:
        try:
            self._deps.queues.send_text(GROUPS_QUEUE, message.encode())
        except AzureError as exc:
            log.warning(
                "group %s: message not sent (%s); the reconciler sends it", message.group_id, type(exc).__name__
            )

    # -- making and cancelling items (queue groups-make) ---------------------------------

    def handle(self, message: GroupMessage) -> GroupMessage | None:
        """Make or cancel one chunk of a group's items, or release one chunk of the jobs waiting for a job or
        group; the next chunk's message, as sent (None: the last).

        Raises AzureError, ConflictError from a release chunk: the message is delivered again (a release
        done twice does nothing twice), and its next chunk's message is sent only once this one is done.
        """
        if message.kind == "release":
            return self._release_chunk(message)
        group = self._groups.find(message.group_id)
        if group is None:
            log.warning("groups: group %s does not exist; dropping the message", message.group_id)
            return None
        end = min(message.start + CHUNK, group.item_count)
        following = GroupMessage(group_id=group.id, kind=message.kind, start=end) if end < group.item_count else None
        if message.kind == "cancel":
            self._cancel_chunk(group, range(message.start, end))
        else:
            self._make_chunk(group, range(message.start, end))
        if following is not None:
            self._send(following)
        return following

    def _release_chunk(self, message: GroupMessage) -> GroupMessage | None:
        """Release the chunk of dependents ``message`` names, then send the next chunk's message. A dependent
        listed and not stored yet (its request is between its entry and its document) re-arms the upstream
        first, so the next sweep releases again (ADR 0047)."""
        after = Dependencies(self._deps)
        dependents, following = after.chunk(message.group_id, message.resume_after)
        list(self._pool.map(after.release, dependents))
        unstored = after.pending(message.group_id)
        if unstored and after.rearm(message.group_id):
            log.info("release of %s: %s not stored yet; re-armed for the next sweep", message.group_id, unstored)
        if following is not None:
            self._deps.queues.send_text(GROUPS_QUEUE, following.encode())
        return following

    def _make_chunk(self, group: Group, indices: range) -> None:
        todo = [i for i in indices if group.marks[i] == NOT_MADE]
        if not todo:
            return
        outcome: dict[int, str | None] = {}
        if group.cancel_requested:
            outcome = dict.fromkeys(todo, "cancelled before it was made")
        else:
            request = self._groups.request(group.id)
            for index, problem in zip(todo, self._pool.map(lambda i: self._make(group, request, i), todo), strict=True):
                outcome[index] = problem
        now = self._deps.clock()

        def change(current: Group) -> Group | None:
            marks = list(current.marks)
            failures = list(current.failures)
            for index, problem in outcome.items():
                if marks[index] != NOT_MADE or current.attempt(index) != group.attempt(index):
                    continue
                if problem is None:
                    marks[index] = "q"
                else:
                    state = JobState.CANCELLED if current.cancel_requested else JobState.FAILED
                    marks[index] = MARKS[state]
                    failures.append(Failure(index=index, job_id=current.job_id(index), state=state, reason=problem))
            update: dict[str, Any] = {"marks": "".join(marks), "failures": failures[:20], "updated_at": now}
            if NOT_MADE not in update["marks"] and current.made_at is None:
                update["made_at"] = now
            updated = current.model_copy(update=update)
            return None if updated.marks == current.marks else _settled(updated, now)

        self._announce_if_completed(self._commit.apply(group.id, change))

    def _make(self, group: Group, request: GroupRequest, index: int) -> str | None:
        """Make item ``index`` into its job (again: a replay); None, or why it cannot be made."""
        try:
            self._acceptor.accept(
                request.item_request(index),
                source=f"group {group.id}",
                submitter=group.submitted_by,
                job_id=group.job_id(index),
                group=GroupSlot(group.id, index, group.attempt(index)),
            )
        except (HasteError, ValidationError) as exc:
            log.info("group %s: item %d not made: %s", group.id, index, exc)
            return str(exc)[:300]
        return None

    def _cancel_chunk(self, group: Group, indices: range) -> None:
        def cancel(index: int) -> None:
            # ended meanwhile, or never made (the make step marks it cancelled)
            with contextlib.suppress(ConflictError, JobNotFoundError):
                self._cancel.cancel(group.job_id(index))

        list(self._pool.map(cancel, [i for i in indices if group.marks[i] in "qr"]))

    def cancel(self, group_id: str) -> Group:
        """Cancel every queued and running item (and every item not made yet); a repeat changes nothing.

        Raises GroupNotFoundError.
        """
        now = self._deps.clock()

        def change(group: Group) -> Group | None:
            if group.cancel_requested or group.completed_at is not None:
                return None
            return group.model_copy(update={"cancel_requested": True, "cancel_requested_at": now, "updated_at": now})

        group, wrote = self._groups.update(group_id, change)
        if wrote:
            self._send(GroupMessage(group_id=group_id, kind="cancel"))
            self._send(GroupMessage(group_id=group_id, kind="make"))  # marks items never made as cancelled
        return group

    def retry(self, group_id: str) -> tuple[Group, int]:
        """Make the failed and cancelled items again, each as a new job (its attempt + 1); the group and how many.

        Raises GroupNotFoundError, ConflictError (nothing to retry, or items still running).
        """
        now = self._deps.clock()

        def change(group: Group) -> Group | None:
            again = [i for i, mark in enumerate(group.marks) if mark in "fc"]
            if not again or group.completed_at is None:
                return None
            attempts = dict(group.attempts)
            marks = list(group.marks)
            for index in again:
                attempts[str(index)] = group.attempt(index) + 1
                marks[index] = NOT_MADE
            return group.model_copy(
                update={
                    "attempts": attempts,
                    "marks": "".join(marks),
                    "failures": [],
                    "completed_at": None,
                    "completion_published": False,
                    "cancel_requested": False,
                    "cancel_requested_at": None,
                    "updated_at": now,
                }
            )

        before = self._groups.get(group_id)
        if before.completed_at is None:
            raise ConflictError(f"Group {group_id} has items still queued or running; retry it once they ended")
        self._groups.reopen(group_id)
        group, wrote = self._groups.update(group_id, change)
        if not wrote:
            raise ConflictError(f"Group {group_id} has no failed or cancelled items to retry")
        self._send(GroupMessage(group_id=group_id))
        return group, sum(1 for mark in group.marks if mark == NOT_MADE)

    # -- the journal's followers step ----------------------------------------------------

    def after_write(self, previous: JobState, job: Job) -> None:
        """A job's state changed: its group's mark, then the jobs waiting for it (ADR 0040)."""
        if job.group_id is not None and job.group_index is not None and MARKS[previous] != MARKS[job.state]:
            self._mark(job)
        if job.state.terminal:
            Dependencies(self._deps).upstream_ended(job.id, flagged=job.has_dependents)

    def _mark(self, job: Job) -> None:
        """Write item ``job``'s state into its group, in one write with the marks of the same group that this
        process makes meanwhile (:mod:`hastegeo.pipeline.group_commit`, ADR 0049); returns once it is stored.
        Raises AzureError, ConflictError: not marked (the item is not retired then, and its due entry is due:
        the reconciler marks it, ADR 0047)."""
        assert job.group_id is not None
        assert job.group_index is not None
        index, now = job.group_index, self._deps.clock()

        def change(group: Group) -> Group | None:
            return group.marked(index, job.group_attempt, job.state, job.id, job.reason, now)

        self._announce_if_completed(self._commit.apply(job.group_id, change))

    def _announce_if_completed(self, outcome: Outcome[Group]) -> None:
        """Announce the group when this caller's change is the one that completed it: once, whatever else its
        write carried. Raises AzureError, ConflictError (see :meth:`_announce_if_complete`)."""
        if completes(outcome.prior, outcome.result):
            self._announce_if_complete(outcome.stored)

    def _announce_if_complete(self, group: Group) -> None:
        """Publish the completion of a group whose last item ended, record it, then release what waits for it.

        Raises AzureError, ConflictError: not recorded (the group stays open: the reconciler does it again).
        """
        if group.completed_at is None or group.completion_published:
            return
        if self._publish is not None:
            try:
                self._publish.send([group_event.completed(group)])
            except AzureError as exc:
                log.warning(
                    "group %s: completion not published (%s); the reconciler does", group.id, type(exc).__name__
                )
                return
        completed_at = group.completed_at

        def change(current: Group) -> Group | None:
            if current.completed_at != completed_at or current.completion_published:
                return None
            return current.model_copy(update={"completion_published": True})

        recorded, _ = self._groups.update(group.id, change)
        if recorded.completion_published and recorded.completed_at == completed_at:  # not retried meanwhile
            self._release_group(recorded)

    def _release_group(self, group: Group) -> None:
        """Release the jobs waiting for a completed, announced group, then close it. One not all released stays
        open, and the reconciler's pass releases it again (a crash, a dependent not stored yet, or a release
        message the host gave up on re-armed it: ADR 0047)."""
        try:
            Dependencies(self._deps).upstream_ended(group.id)
        except (AzureError, ConflictError) as exc:
            log.info("group %s: what waits for it not all released (%s); the reconciler does", group.id, exc)
            return
        self._groups.close(group.id)

    # -- the reconciler's repair ---------------------------------------------------------

    def repair(self, jobs: Sequence[Job], now: datetime) -> set[str]:
        """What a crash between a job's write and its followers left undone, and groups left half made.

        ``jobs``: the jobs the sweep listed (unfinished, or ended and not yet retired). Returns the ids of
        those whose followers are still not done (the sweep keeps them for the next pass).
        """
        by_group: dict[str, list[Job]] = defaultdict(list)
        after = Dependencies(self._deps)
        undone: set[str] = set()
        for job in jobs:
            if job.group_id is not None and job.group_index is not None:
                by_group[job.group_id].append(job)
            try:
                if job.state is JobState.QUEUED and job.waiting_for:
                    after.release(job.id)
                elif job.state.terminal:
                    after.upstream_ended(job.id, flagged=job.has_dependents)
            except (AzureError, ConflictError) as exc:
                log.info("repair: the followers of job %s not done (%s)", job.id, type(exc).__name__)
                undone.add(job.id)
        for group_id, items in by_group.items():
            group = self._groups.find(group_id)
            if group is None:
                continue
            for job in items:
                if group.marked(job.group_index or 0, job.group_attempt, job.state, job.id, job.reason, now):
                    try:
                        self._mark(job)
                    except (AzureError, ConflictError) as exc:
                        log.info("repair: group %s, item %s not marked (%s)", group_id, job.id, type(exc).__name__)
                        undone.add(job.id)
        for group_id in self._groups.open_groups():
            group = self._groups.find(group_id)
            if group is None:
                continue
            if group.completed_at is not None and group.completion_published:
                self._release_group(group)  # announced, its release not done (or re-armed): again
            elif group.completed_at is not None:
                try:
                    self._announce_if_complete(group)
                except (AzureError, ConflictError) as exc:  # its open entry stays: the next pass
                    log.info("repair: group %s's completion not finished (%s)", group_id, type(exc).__name__)
            elif NOT_MADE in group.marks and (now - group.updated_at).total_seconds() > QUIET_S:
                self._send(GroupMessage(group_id=group_id))
            elif _cancel_stalled(group, now):
                self._cancel_again(group_id, now)
        return undone

    def _cancel_again(self, group_id: str, now: datetime) -> None:
        """Send a cancelled group's cancel again: a chunk of it may have been given up on (ADR 0047). The request's
        time moves first, so the next pass waits :data:`CANCEL_AGAIN_S` again; a crash before the send leaves the
        group for the pass after that."""

        def change(group: Group) -> Group | None:
            return group.model_copy(update={"cancel_requested_at": now}) if _cancel_stalled(group, now) else None

        try:
            _, wrote = self._groups.update(group_id, change)
            if wrote:
                log.info("group %s: items still queued or running after its cancel; cancelling them again", group_id)
                self._send(GroupMessage(group_id=group_id, kind="cancel"))
        except (AzureError, ConflictError) as exc:
            log.info("repair: group %s's cancel not sent again (%s)", group_id, type(exc).__name__)


def _cancel_stalled(group: Group, now: datetime) -> bool:
    """Whether a cancelled group still has items queued or running :data:`CANCEL_AGAIN_S` after its cancel
    was sent (pure)."""
    if not group.cancel_requested or not any(mark in "qr" for mark in group.marks):
        return False
    sent = group.cancel_requested_at or group.updated_at  # a group stored before the field: its last change
    return (now - sent).total_seconds() > CANCEL_AGAIN_S


def _settled(group: Group, now: datetime) -> Group:
    """``group`` with its completion time once every item is made and ended."""
    if group.complete and group.completed_at is None:
        return group.model_copy(update={"completed_at": now})
    return group
