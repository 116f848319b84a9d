"""Queue triggers: submit, poll, upstream requests, groups, providers' events, and the poison queues behind them."""

from __future__ import annotations

import logging

import azure.functions as func
from pydantic import ValidationError

from hastegeo.runtime import get_runtime
from hastegeo.store.queues import (
    GROUPS_QUEUE,
    ITEMS_SUBMIT_QUEUE,
    POISON_SUFFIX,
    POLL_QUEUE,
    PROVIDER_EVENTS_QUEUE,
    REQUESTS_QUEUE,
    SUBMIT_QUEUE,
    GroupMessage,
    JobMessage,
)

log = logging.getLogger(__name__)
bp = func.Blueprint()  # type: ignore[no-untyped-call]
CONNECTION = "AzureWebJobsStorage"


def _pointer(msg: func.QueueMessage, queue: str) -> JobMessage | None:
    try:
        return JobMessage.model_validate_json(msg.get_body())
    except ValidationError:
        # Retrying cannot fix a message that is not a job pointer: log it and consume it.
        log.error("%s: message %s is not a job pointer: %.200r", queue, msg.id, msg.get_body())
        return None


@bp.queue_trigger(arg_name="msg", queue_name=SUBMIT_QUEUE, connection=CONNECTION)
def submit_trigger(msg: func.QueueMessage) -> None:
    _submit(msg, SUBMIT_QUEUE)


@bp.queue_trigger(arg_name="msg", queue_name=ITEMS_SUBMIT_QUEUE, connection=CONNECTION)
def items_submit_trigger(msg: func.QueueMessage) -> None:
    # A group item's first submit: the same step, read beside jobs-submit rather than ahead of it (ADR 0040).
    _submit(msg, ITEMS_SUBMIT_QUEUE)


def _submit(msg: func.QueueMessage, queue: str) -> None:
    message = _pointer(msg, queue)
    if message is not None:
        get_runtime().submit.handle(message)


@bp.queue_trigger(arg_name="msg", queue_name=POLL_QUEUE, connection=CONNECTION)
def poll_trigger(msg: func.QueueMessage) -> None:
    message = _pointer(msg, POLL_QUEUE)
    if message is not None:
        get_runtime().poll.handle(message)


@bp.queue_trigger(arg_name="msg", queue_name=REQUESTS_QUEUE, connection=CONNECTION)
def requests_trigger(msg: func.QueueMessage) -> None:
    # The step's span is the root of the job's trace, or joins the upstream trace the request names.
    get_runtime().upstream.handle(msg.get_body().decode("utf-8", errors="replace"), msg.id or "unknown")


@bp.queue_trigger(arg_name="msg", queue_name=GROUPS_QUEUE, connection=CONNECTION)
def groups_trigger(msg: func.QueueMessage) -> None:
    try:
        message = GroupMessage.model_validate_json(msg.get_body())
    except ValidationError:
        log.error("%s: message %s is not a group pointer: %.200r", GROUPS_QUEUE, msg.id, msg.get_body())
        return
    get_runtime().groups.handle(message)


@bp.queue_trigger(arg_name="msg", queue_name=PROVIDER_EVENTS_QUEUE, connection=CONNECTION)
def provider_events_trigger(msg: func.QueueMessage) -> None:
    # A provider's "this job ended" (Azure ML through Event Grid): look at the job now (ADR 0048).
    get_runtime().provider_events.handle(msg.get_body())


@bp.queue_trigger(arg_name="msg", queue_name=GROUPS_QUEUE + POISON_SUFFIX, connection=CONNECTION)
def groups_poison_trigger(msg: func.QueueMessage) -> None:
    # One line saying what was lost; a release is re-armed for the reconciler's next pass (ADR 0047).
    get_runtime().group_poison.handle(msg.get_body().decode("utf-8", errors="replace"))


@bp.queue_trigger(arg_name="msg", queue_name=SUBMIT_QUEUE + POISON_SUFFIX, connection=CONNECTION)
def submit_poison_trigger(msg: func.QueueMessage) -> None:
    get_runtime().poison.handle(msg.get_body().decode("utf-8", errors="replace"), SUBMIT_QUEUE)


@bp.queue_trigger(arg_name="msg", queue_name=ITEMS_SUBMIT_QUEUE + POISON_SUFFIX, connection=CONNECTION)
def items_submit_poison_trigger(msg: func.QueueMessage) -> None:
    get_runtime().poison.handle(msg.get_body().decode("utf-8", errors="replace"), ITEMS_SUBMIT_QUEUE)


@bp.queue_trigger(arg_name="msg", queue_name=POLL_QUEUE + POISON_SUFFIX, connection=CONNECTION)
def poll_poison_trigger(msg: func.QueueMessage) -> None:
    get_runtime().poison.handle(msg.get_body().decode("utf-8", errors="replace"), POLL_QUEUE)


@bp.queue_trigger(arg_name="msg", queue_name=REQUESTS_QUEUE + POISON_SUFFIX, connection=CONNECTION)
def requests_poison_trigger(msg: func.QueueMessage) -> None:
    # A request the upstream step crashed on repeatedly: keep it for operators, like a rejection.
    get_runtime().upstream.reject_poisoned(msg.get_body().decode("utf-8", errors="replace"), msg.id or "unknown")
