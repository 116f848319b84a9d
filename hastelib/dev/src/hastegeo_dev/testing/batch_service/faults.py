"""Scriptable faults of the Batch test service: each rule is consumed as requests match it."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

NODE_NOT_READY = "Node is not able to perform the requested operations in its current state."
NODE_NOT_FOUND = "The specified node does not exist."

OPERATIONS = (
    "create_job",
    "get_job",
    "update_job",
    "terminate_job",
    "create_task",
    "get_task",
    "terminate_task",
    "list_task_files",
    "get_task_file",
    "get_task_file_properties",
    "delete_task_file",
    "get_pool",
    "get_node",
)


@dataclass
class Rule:
    op: str
    times: int
    job_id: str | None = None
    status: int = 0  # an error answer (0: none)
    code: str = ""
    message: str = ""
    retry_after: float | None = None
    lose_response: bool = False  # process the request, then drop the connection without answering
    delay_s: float = 0.0  # answer slowly

    def matches(self, op: str, job_id: str | None) -> bool:
        return self.times > 0 and self.op == op and (self.job_id is None or self.job_id == job_id)


@dataclass
class NodeLoss:
    not_ready_calls: int
    job_id: str | None = None


@dataclass
class PreemptOn:
    """Preempt the run once the task's file ``path`` (under its working directory) contains ``text``."""

    text: str
    path: str
    job_id: str | None = None
    notice_s: float = 10.0  # SIGTERM first; killed if still running after this long


@dataclass
class CapacityRefusal:
    """A pool that gives its tasks no node: its last resize failed with ``code`` (None: it never grows)."""

    code: str | None
    message: str
    current_nodes: int = 0
    target_nodes: int = 1
    auto_scale: bool = False


@dataclass
class Faults:
    """Faults to inject, per operation name (see :data:`OPERATIONS`) and optionally per job id."""

    rules: list[Rule] = field(default_factory=list)
    node_losses: list[NodeLoss] = field(default_factory=list)
    preemptions: dict[str | None, int] = field(default_factory=dict)
    preempt_after_s: float = 0.3  # how long a run lasts before its node is preempted
    preempt_on: list[PreemptOn] = field(default_factory=list)
    capacity: dict[str, CapacityRefusal] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def fail(
        self,
        op: str,
        status: int,
        code: str,
        *,
        times: int = 1,
        retry_after: float | None = None,
        message: str = "",
        job_id: str | None = None,
    ) -> Faults:
        """Answer ``op`` with ``status``/``code`` (e.g. 503 ServerBusy, 429 TooManyRequests) ``times`` times."""
        self._check(op)
        with self._lock:
            self.rules.append(Rule(op, times, job_id, status, code, message or f"{code} (injected)", retry_after))
        return self

    def lose_response(self, op: str, *, times: int = 1, job_id: str | None = None) -> Faults:
        """Carry out ``op`` but drop the connection instead of answering (a lost create response)."""
        self._check(op)
        with self._lock:
            self.rules.append(Rule(op, times, job_id, lose_response=True))
        return self

    def slow(self, op: str, seconds: float, *, times: int = 1, job_id: str | None = None) -> Faults:
        self._check(op)
        with self._lock:
            self.rules.append(Rule(op, times, job_id, delay_s=seconds))
        return self

    def node_lost_after_completion(self, not_ready_calls: int = 3, *, job_id: str | None = None) -> Faults:
        """The node is deallocated once the task completes: file APIs answer 409 NodeNotReady
        ``not_ready_calls`` times, then 404 NodeNotFound; the task's files on it are gone."""
        with self._lock:
            self.node_losses.append(NodeLoss(not_ready_calls, job_id))
        return self

    def preempt(
        self, times: int = 1, *, job_id: str | None = None, after_s: float | None = None, pool_id: str | None = None
    ) -> Faults:
        """The node running the task is preempted ``times`` times (each run ``after_s`` after it started): the
        task is requeued and re-run elsewhere. ``pool_id``: only tasks on that pool (a job id never has ':')."""
        key = f"pool:{pool_id}" if pool_id else job_id
        with self._lock:
            self.preemptions[key] = self.preemptions.get(key, 0) + times
            self.preempt_after_s = self.preempt_after_s if after_s is None else after_s
        return self

    def preempt_on_output(self, text: str, *, path: str, job_id: str | None = None, notice_s: float = 10.0) -> Faults:
        """The node is preempted once, when the task's ``path`` (relative to its working directory) first
        contains ``text`` (say, a workload's progress line for its second epoch): the task is told with
        SIGTERM, killed ``notice_s`` later if it is still running, and requeued on another node."""
        with self._lock:
            self.preempt_on.append(PreemptOn(text, path, job_id, notice_s))
        return self

    def refuse_capacity(
        self,
        pool_id: str,
        code: str | None = None,
        message: str = "",
        *,
        nodes: int = 0,
        target: int = 1,
        auto_scale: bool = False,
    ) -> Faults:
        """Tasks on ``pool_id`` stay active (no node takes them) until :meth:`grant_capacity`; the pool
        reports ``nodes`` busy nodes of ``target`` and, with ``code``, that its last resize failed with it
        (``AccountCoreQuotaReached``, ``AllocationFailed``, …). ``target=0``: a pool sized to zero."""
        with self._lock:
            self.capacity[pool_id] = CapacityRefusal(code, message or f"{code} (injected)", nodes, target, auto_scale)
        return self

    def grant_capacity(self, pool_id: str) -> Faults:
        """The pool grows: its waiting tasks start."""
        with self._lock:
            self.capacity.pop(pool_id, None)
        return self

    def capacity_refusal(self, pool_id: str) -> CapacityRefusal | None:
        with self._lock:
            return self.capacity.get(pool_id)

    def clear(self) -> None:
        with self._lock:
            self.capacity.clear()
            self.rules.clear()
            self.node_losses.clear()
            self.preemptions.clear()
            self.preempt_on.clear()

    # -- used by the service ----------------------------------------------------------

    def take_rule(self, op: str, job_id: str | None) -> Rule | None:
        with self._lock:
            for rule in self.rules:
                if rule.matches(op, job_id):
                    rule.times -= 1
                    return rule
        return None

    def take_node_loss(self, job_id: str) -> int | None:
        with self._lock:
            for loss in self.node_losses:
                if loss.job_id in (None, job_id):
                    if loss.job_id is not None:
                        self.node_losses.remove(loss)
                    return loss.not_ready_calls
        return None

    def take_preempt_on(self, job_id: str) -> PreemptOn | None:
        with self._lock:
            for rule in self.preempt_on:
                if rule.job_id in (None, job_id):
                    self.preempt_on.remove(rule)
                    return rule
        return None

    def take_preemption(self, job_id: str, pool_id: str = "") -> bool:
        with self._lock:
            for key in (job_id, f"pool:{pool_id}", None):
                if self.preemptions.get(key, 0) > 0:
                    self.preemptions[key] -= 1
                    return True
        return False

    @staticmethod
    def _check(op: str) -> None:
        if op not in OPERATIONS:
            raise ValueError(f"unknown operation {op!r}; choose from {OPERATIONS}")
