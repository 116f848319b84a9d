"""Job events: each stored state change as a CloudEvents 1.0 event (docs/events.md, ADR 0024).

:mod:`.cloudevent` builds the event (pure), :mod:`.publish` sends it to the ``jobs-events``
queue and, when configured, to an Event Grid topic (:mod:`.eventgrid`, the only module that
speaks to Event Grid), and :mod:`.trace_context` checks the W3C trace context an upstream
request carries. The job store calls the publisher right after the write that stored a change.
"""
