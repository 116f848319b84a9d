"""The storage settings of a test's own pipeline: the session's Azurite, containers of its own."""

from __future__ import annotations


def isolated_storage(connection_string: str, unique: str) -> dict[str, str]:
    """``AzureWebJobsStorage`` and job, input and output containers named for ``unique`` (one test's)."""
    return {
        "AzureWebJobsStorage": connection_string,
        "HASTE_JOBS_CONTAINER": f"jobs-{unique}",
        "HASTE_OUTPUTS_CONTAINER": f"outputs-{unique}",
        "HASTE_INPUTS_CONTAINER": f"inputs-{unique}",
    }
