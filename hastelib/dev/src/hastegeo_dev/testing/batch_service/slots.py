"""Task slots of a pool of fixed size, taken as Batch's scheduler gives them out.

Batch starts a pool's active tasks as task slots free up, tasks of jobs with a
higher priority first; among equal priorities its documentation leaves the order
undefined, and this service takes them in the order they were added (first come,
first served). Nothing in Batch takes turns between the projects behind the jobs.
A pool given a size here (:meth:`PoolSlots.size`) behaves so; a pool without one
has a node for every task, as the service always had. Every method runs under the
engine's lock; a waiting task sleeps on its own event, woken when it is first in line.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections import Counter


class PoolSlots:
    def __init__(self) -> None:
        self.sizes: dict[str, int] = {}  # pool id → task slots (absent: unbounded)
        self._lines: dict[str, list[tuple[int, int]]] = {}  # pool → heap of (-priority, ticket)
        self._busy: Counter[str] = Counter()
        self._turns: dict[int, threading.Event] = {}
        self._left: set[int] = set()  # tickets that left the line before their turn
        self._tickets = itertools.count(1)

    def join(self, pool: str, priority: int) -> tuple[int, threading.Event]:
        """A task that wants a slot: its ticket and the event set when it may look again."""
        ticket, turn = next(self._tickets), threading.Event()
        heapq.heappush(self._lines.setdefault(pool, []), (-priority, ticket))
        self._turns[ticket] = turn
        return ticket, turn

    def take(self, pool: str, ticket: int) -> bool:
        """True (and the slot is the ticket's) when a slot is free and the ticket is first in line."""
        line = self._lines.get(pool, [])
        self._drop_left(line)
        if self._busy[pool] >= self.sizes.get(pool, 0) or not line or line[0][1] != ticket:
            return False
        heapq.heappop(line)
        self._turns.pop(ticket, None)
        self._busy[pool] += 1
        self._wake(pool)
        return True

    def leave(self, pool: str, ticket: int, *, held: bool) -> None:
        """The task ended (or was requeued, or gave up waiting): its slot, or its place, is free."""
        if held:
            self._busy[pool] -= 1
        else:
            self._left.add(ticket)
            self._turns.pop(ticket, None)
        self._wake(pool)

    def _wake(self, pool: str) -> None:
        line = self._lines.get(pool, [])
        self._drop_left(line)
        if line and self._busy[pool] < self.sizes.get(pool, 0):
            turn = self._turns.get(line[0][1])
            if turn is not None:
                turn.set()

    def _drop_left(self, line: list[tuple[int, int]]) -> None:
        while line and line[0][1] in self._left:
            self._left.discard(heapq.heappop(line)[1])
