"""Does Application Insights receive the app's telemetry?"""

from __future__ import annotations

from hastegeo.doctor.facts import Telemetry
from hastegeo.doctor.result import CheckResult, failed, passed

AREA = "telemetry"


def check_telemetry(found: Telemetry, window_hours: int, export: str) -> CheckResult:
    name = f"records in the last {window_hours} h"
    if found.records:
        return passed(AREA, name, f"{found.records}, latest {found.last}")
    hints = [] if export == "azure" else [f"HASTE_OTEL_EXPORT is {export!r}, not 'azure'"]
    return failed(
        AREA,
        name,
        "none" + (f" ({'; '.join(hints)})" if hints else ""),
        "call GET /api/health and run the doctor again after 5 minutes; if still none, check "
        "APPLICATIONINSIGHTS_CONNECTION_STRING, HASTE_OTEL_EXPORT=azure and the app's Monitoring Metrics "
        "Publisher role (the roles area)",
    )
