"""The upstream step (queue ``jobs-requests``): a job request dropped on a queue by another service.

It is validated exactly like the HTTP body. An invalid request is kept as a
rejection record and the message is consumed: retrying cannot fix it, and a
poison queue full of bad requests helps no one. The queue message id is the
idempotency key, so a redelivered message never creates a second job.

A queue message carries no caller identity (whoever may write to the queue
may submit to any project), so the submitter recorded on such a job is the
queue itself; inputs are held to the job's project like any other request.
"""

from __future__ import annotations

import logging
import re

from hastegeo.events import trace_context
from hastegeo.models.job import Submitter
from hastegeo.pipeline.accept import JobAcceptor, RequestRejected, decode_body, parse_request
from hastegeo.pipeline.deps import PipelineDeps
from hastegeo.pipeline.groups import GroupSteps, parse_group
from hastegeo.store.queues import REQUESTS_QUEUE
from hastegeo.telemetry import tracer
from hastegeo.utils.errors import BackendUnavailableError, ConflictError, InvalidJobError
from hastegeo.utils.redaction import redact

log = logging.getLogger(__name__)
KEPT_BODY_CHARS = 4096
QUEUE_SUBMITTER = Submitter(name=f"queue {REQUESTS_QUEUE}")


class UpstreamStep:
    def __init__(self, deps: PipelineDeps, acceptor: JobAcceptor, groups: GroupSteps | None = None) -> None:
        self._deps = deps
        self._acceptor = acceptor
        self._groups = groups

    def handle(self, text: str, message_id: str) -> str | None:
        """Accept the request. Returns the job id (of a group request: the group id), or None when it was rejected.

        The step's span is the root of the job's trace, or joins the upstream trace when the
        message carries ``traceparent``/``tracestate`` (optional members beside the request's).
        Invalid ones are dropped with a history note, never a rejection.
        """
        context = trace_context.of_message(text)
        with tracer.step_span(
            REQUESTS_QUEUE,
            traceparent=context.traceparent,
            tracestate=context.tracestate,
            attributes={"messaging.message.id": message_id},
        ):
            return self._handle(text, message_id, context)

    def _handle(self, text: str, message_id: str, context: trace_context.TraceContext) -> str | None:
        try:
            body = trace_context.without_envelope(decode_body(text))
            if self._groups is not None and isinstance(body, dict) and "items" in body:  # a group (ADR 0040)
                group, _ = self._groups.accept(
                    parse_group(body), idempotency_key=f"queue-message:{message_id}", submitter=QUEUE_SUBMITTER,
                    source="queue",
                )  # fmt: skip
                return group.id
            request = parse_request(body)
            accepted = self._acceptor.accept(
                request,
                idempotency_key=f"queue-message:{message_id}",
                source="queue",
                submitter=QUEUE_SUBMITTER,
                notes=context.notes,
            )
        except RequestRejected as exc:
            self._reject(message_id, str(exc), text)
            return None
        except (InvalidJobError, BackendUnavailableError, ConflictError) as exc:
            self._reject(message_id, str(exc), text)
            return None
        return accepted.job.id

    def reject_poisoned(self, text: str, message_id: str) -> None:
        """The host gave up on this message after repeated failures: keep it as a rejection."""
        self._reject(message_id, "could not be processed after repeated attempts", text)

    def _reject(self, message_id: str, reason: str, text: str) -> None:
        safe_id = re.sub(r"[^A-Za-z0-9\-]", "_", message_id)[:64]
        now = self._deps.clock()
        name = self._deps.store.save_rejection(
            f"{now:%Y-%m-%d}/{safe_id}",
            {"messageId": message_id, "receivedAt": now.isoformat(), "reason": redact(reason)[:KEPT_BODY_CHARS],
             "body": redact(text[:KEPT_BODY_CHARS]), "truncated": len(text) > KEPT_BODY_CHARS},
        )  # fmt: skip
        log.warning("rejected upstream request %s: %s (kept as %s)", message_id, redact(reason)[:300], name)
