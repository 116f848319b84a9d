"""Who hears that this process added a message to a queue, ready at once.

A queue listener that found its queue empty waits longer between looks, up to
host.json's ``maxPollingInterval`` (Azure's queue trigger documents this back-off).
The Functions host skips that wait for messages a function of the same host writes
through a queue output binding: it tells that queue's listener to look now. The app
sends its messages itself instead (ADR 0031: within the API's storage budget), so in
Azure a submit sent by ``POST /api/jobs`` waits for the submit listener's next look,
up to a second on an idle app.

Nothing in the app listens here. The development host does (ADR 0050): it wakes its
listener for the queue, as it would for a binding, so that an idle stack starts a job
in tens of milliseconds. That makes the development host quicker than Azure on an idle
queue; docs/reliability.md says by how much.

A listener is called on the sending thread, after the send succeeded, with the queue's
name; what it raises is logged and dropped: the message is sent, and a look missed only
waits for the listener's next poll.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

SendListener = Callable[[str], None]

_listeners: tuple[SendListener, ...] = ()
_lock = threading.Lock()


def listen_for_sends(listener: SendListener) -> Callable[[], None]:
    """Call ``listener(queue)`` after each message this process sends ready at once; returns what stops it."""
    global _listeners
    with _lock:
        _listeners = (*_listeners, listener)

    def stop() -> None:
        global _listeners
        with _lock:
            _listeners = tuple(known for known in _listeners if known is not listener)

    return stop


def sent(queue: str) -> None:
    """Tell every listener that a message visible at once was added to ``queue`` (never raises)."""
    for listener in _listeners:
        try:
            listener(queue)
        except Exception:
            log.debug("a send listener failed for queue %s", queue, exc_info=True)
