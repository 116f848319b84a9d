"""What the composition root hands every adapter factory: settings and the outside world.

Adapters receive their clients, clock and sleeper here instead of reaching
for globals, so tests build them with fakes and never patch or sleep.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from azure.storage.blob import BlobServiceClient

    from hastegeo.config import Settings


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class BackendContext:
    settings: Settings
    blob_service: BlobServiceClient
    # Staging inputs and uploading outputs: a client of the same account whose retry
    # policy is the one owner of those retries (the composition root builds it with
    # hastegeo.runtime.transfer_client). None: they go through ``blob_service``.
    transfer_blobs: BlobServiceClient | None = None
    # Called with a job id when a workload ends, so the pipeline can look at
    # once instead of at the next poll. Optional: polling alone is correct.
    notify_exit: Callable[[str], None] = field(default=lambda job_id: None)
    clock: Callable[[], datetime] = utc_now
    sleep: Callable[[float], None] = time.sleep
