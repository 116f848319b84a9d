"""Status history: append-only, sanitized, bounded.

History is what an operator reads at 3 a.m., so every message goes through
one door (:func:`make_event`): redacted, one line, capped in length. The
list keeps the first events (how the job started) and the latest ones (how
it is ending), and counts what was folded in between rather than growing
without limit inside the job document.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from hastegeo.models.states import JobState
from hastegeo.utils.redaction import redact

MESSAGE_MAX = 400
HEAD_KEPT = 10


class StatusEvent(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, alias_generator=to_camel)

    at: datetime
    state: JobState
    message: str
    source: str = Field(description="Which part of the pipeline wrote it: api, submit, poll, postprocess, …")


def clean_message(text: str) -> str:
    """One redacted line of at most :data:`MESSAGE_MAX` characters."""
    line = " ".join(redact(text).split())
    return line if len(line) <= MESSAGE_MAX else line[: MESSAGE_MAX - 1] + "…"


def make_event(at: datetime, state: JobState, message: str, source: str) -> StatusEvent:
    return StatusEvent(at=at, state=state, message=clean_message(message), source=source)


def append_event(
    history: list[StatusEvent], folded: int, event: StatusEvent, limit: int
) -> tuple[list[StatusEvent], int]:
    """Return the new history and folded count after appending ``event``.

    When the list would exceed ``limit``, the oldest event after the first
    :data:`HEAD_KEPT` is dropped and counted in ``folded``.
    """
    updated = [*history, event]
    if len(updated) > limit:
        drop = len(updated) - limit
        head = min(HEAD_KEPT, limit // 2)
        updated = updated[:head] + updated[head + drop :]
        folded += drop
    return updated, folded
