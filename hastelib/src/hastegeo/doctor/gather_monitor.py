"""Count what reached Application Insights recently (azure-monitor-query, imported here only)."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from hastegeo.doctor.facts import Telemetry, Unreadable
from hastegeo.doctor.gather_arm import unreadable

if TYPE_CHECKING:
    from azure.core.credentials import TokenCredential

# Classic table names: a query scoped to the Application Insights resource sees them.
QUERY = "union traces, requests, dependencies, exceptions | summarize records = count(), last = max(timestamp)"


def telemetry(
    credential: TokenCredential, insights_id: str, hours: int, **client_kwargs: Any
) -> Telemetry | Unreadable:
    from azure.core.exceptions import AzureError
    from azure.monitor.query import LogsQueryClient, LogsQueryStatus

    client = LogsQueryClient(credential, **client_kwargs)
    try:
        result = client.query_resource(insights_id, QUERY, timespan=timedelta(hours=hours))
    except AzureError as exc:
        return unreadable(exc)
    if result.status != LogsQueryStatus.SUCCESS:
        error = getattr(result, "partial_error", None)
        return Unreadable(f"partial result: {getattr(error, 'message', error)}")
    tables = getattr(result, "tables", [])
    rows = list(tables[0].rows) if tables else []
    if not rows:
        return Telemetry(0, None)
    records, last = rows[0][0], rows[0][1]
    return Telemetry(int(records or 0), str(last) if last else None)
