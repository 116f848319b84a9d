"""The capacity board: one small document in the jobs container, written by the reconciler, read by the API."""

from __future__ import annotations

import json
import logging

from azure.core.exceptions import AzureError, ResourceNotFoundError
from azure.storage.blob import ContainerClient
from pydantic import TypeAdapter, ValidationError

from hastegeo.pipeline.capacity_board import BackendQueue

log = logging.getLogger(__name__)
BOARD_BLOB = "capacity/board.json"
_BOARD = TypeAdapter(dict[str, BackendQueue])


class CapacityBoard:
    def __init__(self, container: ContainerClient) -> None:
        self._container = container

    def read(self) -> dict[str, BackendQueue]:
        """The board as last written; empty when there is none yet or it cannot be read (it is a view only)."""
        try:
            data = self._container.download_blob(BOARD_BLOB).readall()
            return _BOARD.validate_json(data)
        except ResourceNotFoundError:
            return {}
        except (AzureError, ValidationError) as exc:
            log.warning("capacity board not readable: %s", type(exc).__name__)
            return {}

    def write(self, board: dict[str, BackendQueue]) -> None:
        """Replace the board (last writer wins: every reconciler pass computes it whole)."""
        body = {name: queue.model_dump(mode="json", by_alias=True) for name, queue in board.items()}
        self._container.upload_blob(BOARD_BLOB, json.dumps(body, sort_keys=True).encode(), overwrite=True)
