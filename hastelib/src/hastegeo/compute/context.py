"""What the composition root hands an adapter factory: its backend's own settings and the outside world.

Adapters receive their clients, clock and sleeper here instead of reaching
for globals, so tests build them with fakes and never patch or sleep. An
adapter sees its own section (the one its descriptor declares) and nothing of
the app's other settings, so a backend's folder depends on no section but its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:  # a local job's process imports this module: standard library only at run time
    from azure.storage.blob import BlobServiceClient

    from hastegeo.settings.fields import BackendSection

B = TypeVar("B", bound="BackendSection")


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class BackendContext:
    # The backend's own section (Settings.backends[name]); read it through section().
    settings: BackendSection
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
    # The most running jobs one project may have on this backend (HASTE_PROJECT_MAX_RUNNING_PER_BACKEND;
    # 0: no limit). A backend that admits jobs itself, as the local one does, honours it.
    project_limit: int = 0

    def section(self, model: type[B]) -> B:
        """The backend's settings as ``model``, the section its descriptor declares.

        Raises:
            ConfigurationError: the context holds another backend's section.
        """
        if not isinstance(self.settings, model):
            from hastegeo.utils.errors import ConfigurationError

            raise ConfigurationError(f"expected {model.__name__}, got {type(self.settings).__name__}")
        return self.settings
