"""What a Batch error code means: the table the one retry module (:mod:`hastegeo.compute.retry`) reads.

Batch's codes are its contract, so a coded error the table does not know is
terminal unless its HTTP status is transient; azure-batch raises
``ResourceExistsError`` for every 409, ``NodeNotReady`` included, so the
exception class decides nothing. Its errors read ``<what we did>: <Code>: <message>``.
"""

from __future__ import annotations

from hastegeo.compute.retry import Classifier, ErrorKind

BATCH_ERRORS = Classifier(
    codes={
        **dict.fromkeys(("ServerBusy", "OperationTimedOut", "InternalError", "TooManyRequests"), ErrorKind.TRANSIENT),
        # A node in transition may still answer: retried within the budget, then the node copy is unavailable.
        **dict.fromkeys(("NodeNotReady", "NodeStateInvalid"), ErrorKind.NODE_TRANSITION),
        **dict.fromkeys(
            ("NodeNotFound", "NodeStateUnusable", "TaskFilesUnavailable", "TaskFilesCleanedup"), ErrorKind.NODE_GONE
        ),
        **dict.fromkeys(("JobNotFound", "TaskNotFound", "FileNotFound"), ErrorKind.NOT_FOUND),
        **dict.fromkeys(("JobExists", "TaskExists"), ErrorKind.EXISTS),
        **dict.fromkeys(
            ("JobCompleted", "JobNotActive", "JobBeingTerminated", "JobBeingDeleted", "TaskCompleted"),
            ErrorKind.FINISHED,
        ),
    },
    prefixes={"NodeBeing": ErrorKind.NODE_TRANSITION},  # NodeBeingCreated, …Rebooted, and future mid-transition states
    codes_decide=True,
    backend="azure_batch",
)
