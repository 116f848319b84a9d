"""Why an Azure ML job waits in its queue: the run's error or warnings, read as data. Pure.

A job queued on a compute cluster that cannot grow (no quota for its VM
family, a cluster at its maximum, a compute that does not exist) stays
``Queued`` and says why only in its run details: an ``error`` with a code, or
``warnings`` (source, message). A code in :data:`AML_CAPACITY` marked blocked
cannot clear without an operator; warnings alone may clear by themselves.
"""

from __future__ import annotations

from typing import Any

from hastegeo.compute.capacity import CapacityClass, CapacityTable, CapacityWait
from hastegeo.utils.errors import describe_error, readable_message

AML_CAPACITY = CapacityTable(
    codes=dict.fromkeys(
        (
            "QuotaExceeded",
            "InsufficientQuota",
            "ComputeQuotaExceeded",
            "ResourceQuotaExceeded",
            "ComputeNotFound",
            "ComputeTargetNotFound",
            "ComputeTargetUnavailable",
        ),
        CapacityClass.BLOCKED,
    )
)


def run_wait(details: Any, compute: str) -> CapacityWait | None:
    """Why the run waits for ``compute``, from ``RunDetails`` (matched by shape); None when it gives no reason."""
    error = getattr(getattr(details, "error", None), "error", None)
    if error is not None:
        code = getattr(error, "code", None)
        reason = f"compute {compute}: {describe_error(code, getattr(error, 'message', None))}"
        return AML_CAPACITY.wait(code, reason)
    for warning in getattr(details, "warnings", None) or ():
        message = readable_message(str(getattr(warning, "message", "") or ""))
        if message:
            return CapacityWait(reason=f"compute {compute}: {message}")
    return None
