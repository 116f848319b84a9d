"""Group commit of the changes to one group document (ADR 0049): callers of one process join one write.

Every item of a group writes its state into the one document ``groups/<id>.json`` (ADR 0040), and
many items end at once. Written one by one, each mark is a read and an ETag write, and concurrent
writers of one document fail each other's ETag check and read and write again. Here, callers of
one process that change the same group join one *batch*: the first caller (the leader) reads the
document once, applies every change queued by then (:func:`apply_all`, pure, in arrival order,
each to what the ones before it left), writes once with the ETag, and every caller returns only
after the write that holds its change is stored. Callers arriving while a write is under way queue
up; when it ends the first of them leads the next batch with all the others. There is no timer: a
lone change, or the first after a quiet spell, is written at once, as before.

A change is a pure function of the stored group (it may run several times: the store reads and
applies again after a conflict with another process). One that raises fails only its own caller;
the others' changes are still written.

Crash windows (the process dies; every caller blocked here dies with it):

- **before the batch's write is stored**: no change of the batch is stored. Each caller is a journal's
  step 1a, so its job is not retired; an ended item's due entry is due at once (ADR 0047), and the
  next sweep's followers' repair writes its mark again.
- **after the write is stored, before the callers return**: the changes are stored, and the callers'
  jobs are not retired; the next sweep marks them again, which changes nothing (a mark never goes
  back, repeating it changes nothing: :meth:`hastegeo.models.group.Group.marked`). If the batch
  completed the group, its announcement is not made yet: the group's ``groups-open/`` entry stays
  until it is, and the reconciler's pass over open groups announces it (ADR 0040).
- **a write that fails** (a storage error, or the document kept changing): every caller of that
  batch raises the error, as each did alone, so the journal's failure path applies to each.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")
Change = Callable[[T], T | None]
Update = Callable[[str, Change[T]], tuple[T, bool]]
MOST = 1000  # changes one write carries at most (a bounded batch: the rest lead the next one)


@dataclass(frozen=True)
class Step(Generic[T]):
    """What one change did in its batch: the document it was given, and what it made of it (None: nothing)."""

    prior: T
    result: T | None
    error: Exception | None = None


@dataclass(frozen=True)
class Outcome(Generic[T]):
    """What a caller's change did: ``stored`` is the document as the batch's write left it (or as read, when no
    change of the batch changed anything); ``prior`` what the caller's change was given, ``result`` what it made
    of it (None: it changed nothing)."""

    stored: T
    prior: T
    result: T | None

    @property
    def changed(self) -> bool:
        """Whether this caller's change changed the group (and the write that holds it is stored)."""
        return self.result is not None


def apply_all(current: T, changes: Sequence[Change[T]]) -> tuple[T | None, list[Step[T]]]:
    """Every change applied in order, each to what the ones before it left. The document to write (None: no
    change changed anything), and what each change did. A change that raises is skipped, its error kept."""
    document, steps, changed = current, [], False
    for change in changes:
        try:
            result = change(document)
        except Exception as exc:
            steps.append(Step(document, None, exc))
            continue
        steps.append(Step(document, result))
        if result is not None:
            document, changed = result, True
    return (document if changed else None), steps


class _Caller(Generic[T]):
    """One caller's change, and what became of it; ``ready`` is set when it has an outcome, or leads."""

    __slots__ = ("change", "error", "leads", "outcome", "ready")

    def __init__(self, change: Change[T]) -> None:
        self.change = change
        self.ready = threading.Event()
        self.leads = False
        self.outcome: Outcome[T] | None = None
        self.error: BaseException | None = None

    def answer(self) -> Outcome[T]:
        if self.error is not None:
            raise self.error
        assert self.outcome is not None
        return self.outcome


class GroupCommit(Generic[T]):
    """Joins concurrent changes of one document into one write (see the module's docstring).

    ``update`` is the store's conditional read-modify-write (:meth:`hastegeo.store.groups.GroupStore.update`).
    """

    def __init__(self, update: Update[T], *, most: int = MOST) -> None:
        self._update = update
        self._most = most
        self._lock = threading.Lock()
        self._waiting: dict[str, list[_Caller[T]]] = {}  # a key is here while a leader of its batches is at work

    def apply(self, key: str, change: Change[T]) -> Outcome[T]:
        """Apply ``change`` to document ``key`` in the next write; returns once that write is stored.

        Raises what the write raised (every caller of its batch does), or what ``change`` itself raised.
        """
        me = _Caller(change)
        with self._lock:
            waiting = self._waiting.get(key)
            if waiting is None:
                self._waiting[key] = []
                me.leads = True
            else:
                waiting.append(me)
        if not me.leads:
            me.ready.wait()
        if me.leads:
            self._lead(key, me)
        return me.answer()

    def waiting(self, key: str) -> int:
        """How many changes of ``key`` wait for the write under way to end (they go in the next one)."""
        with self._lock:
            return len(self._waiting.get(key, ()))

    def _lead(self, key: str, leader: _Caller[T]) -> None:
        with self._lock:
            waiting = self._waiting[key]
            batch = [leader, *waiting[: self._most - 1]]
            del waiting[: len(batch) - 1]
        try:
            self._write(key, batch)
        except BaseException as exc:  # every caller of the batch gets it (the leader raises it in apply)
            for caller in batch:
                caller.error = exc
        finally:
            with self._lock:
                waiting = self._waiting[key]
                following = waiting.pop(0) if waiting else None
                if following is None:
                    del self._waiting[key]
                else:
                    following.leads = True
            for caller in batch[1:]:
                caller.ready.set()
            if following is not None:
                following.ready.set()

    def _write(self, key: str, batch: list[_Caller[T]]) -> None:
        changes = [caller.change for caller in batch]
        steps: list[Step[T]] = []

        def combined(current: T) -> T | None:
            nonlocal steps
            document, steps = apply_all(current, changes)
            return document

        stored, _ = self._update(key, combined)
        for caller, step in zip(batch, steps, strict=True):
            if step.error is not None:
                caller.error = step.error
            else:
                caller.outcome = Outcome(stored, step.prior, step.result)
