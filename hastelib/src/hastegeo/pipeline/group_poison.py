"""The groups queue's poison step (``groups-make-poison``): a message the host gave up on, said in one line.

Each kind of message loses something else, and the line says what, with the ids (:func:`lost`):

- ``make``: a chunk of a group's items is not made. The reconciler sends the group's make message
  again once the group has been quiet for :data:`hastegeo.pipeline.groups.QUIET_S` (ADR 0040).
- ``release``: the jobs waiting for an upstream after the message's marker are not released. The step
  re-arms the upstream (:meth:`hastegeo.pipeline.after.Dependencies.rearm`: an ended job's due entry, a
  group's open entry), so the reconciler's next pass releases again what still waits; a release
  repeated does nothing twice (ADR 0047).
- ``cancel``: a chunk of a group's items is not cancelled. The reconciler sends the group's cancel again
  once items are still queued or running :data:`hastegeo.pipeline.groups.CANCEL_AGAIN_S` after it was sent.
"""

from __future__ import annotations

import logging

from azure.core.exceptions import AzureError
from pydantic import ValidationError

from hastegeo.models.group import is_group_id
from hastegeo.pipeline.after import Dependencies
from hastegeo.pipeline.deps import PipelineDeps
from hastegeo.pipeline.groups import CANCEL_AGAIN_S, CHUNK, QUIET_S
from hastegeo.store.queues import GROUPS_QUEUE, GroupMessage
from hastegeo.utils.errors import HasteError, describe_exception

log = logging.getLogger(__name__)


def lost(message: GroupMessage) -> str:
    """What giving up on ``message`` loses, as the first half of a log line (pure)."""
    if message.kind == "release":
        upstream = f"{'group' if is_group_id(message.group_id) else 'job'} {message.group_id}"
        where = f"after job {message.resume_after}" if message.resume_after else "from the first"
        return f"gave up on releasing the jobs waiting for {upstream} ({where})"
    verb = "making" if message.kind == "make" else "cancelling"
    return f"gave up on {verb} the items of group {message.group_id} from index {message.start} (up to {CHUNK})"


class GroupPoisonStep:
    """A ``groups-make`` message the host gave up on: one line saying what was lost; a release is re-armed."""

    def __init__(self, deps: PipelineDeps) -> None:
        self._deps = deps

    def handle(self, text: str) -> None:
        try:
            message = GroupMessage.model_validate_json(text)
        except ValidationError:
            log.error("%s: gave up on a message that is not a group pointer: %.200r", GROUPS_QUEUE, text)
            return
        if message.kind == "make":
            then = f"the reconciler sends the group's make message again once it has been quiet for {QUIET_S:.0f} s"
        elif message.kind == "cancel":
            then = (
                "the reconciler sends the group's cancel again if items are still queued or running "
                f"{CANCEL_AGAIN_S:.0f} s after it was sent"
            )
        else:
            then = self._rearm(message)
        log.error("%s: %s; %s", GROUPS_QUEUE, lost(message), then)

    def _rearm(self, message: GroupMessage) -> str:
        """Re-arm the release's upstream; what happens next, for the log line."""
        try:
            armed = Dependencies(self._deps).rearm(message.group_id)
        except (AzureError, HasteError) as exc:
            return f"not re-armed ({describe_exception(exc)}): send {message.encode()} to {GROUPS_QUEUE} again"
        if not armed:
            return "nothing to re-arm: its upstream has not ended (its end releases them) or has no followers"
        return "re-armed: the reconciler's next pass releases again the jobs still waiting"
