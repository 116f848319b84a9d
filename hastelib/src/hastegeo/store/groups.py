"""Groups and dependencies in the jobs container (ADR 0040); ETag writes like the job store.

- ``groups/<id>.json``: the group document (:class:`hastegeo.models.group.Group`);
- ``groups/<id>/request.json``: the request as accepted (its items), written before the document;
- ``groups-open/<id>``: an empty entry while the group is not completed and announced, for the
  reconciler (written before the document, deleted after the completion is published);
- ``after/<upstream id>/<dependent id>``: an empty entry per job waiting for a job or group,
  written before the dependent's document, so a release finds every dependent stored
  (and skips one whose document is not stored yet: the reconciler releases that one).
"""

from __future__ import annotations

import contextlib
import json
import random
import time
from collections.abc import Callable
from datetime import datetime
from itertools import islice
from typing import NamedTuple

from azure.core import MatchConditions
from azure.core.exceptions import ResourceExistsError, ResourceModifiedError, ResourceNotFoundError
from azure.storage.blob import ContainerClient, ContentSettings

from hastegeo.models.group import Group, GroupRequest
from hastegeo.utils.backoff import tries
from hastegeo.utils.errors import ConflictError, HasteError

_JSON = ContentSettings(content_type="application/json")
OPEN = "groups-open/"
AFTER = "after/"


class Listed(NamedTuple):
    """A job listed as waiting for an upstream, and when its ``after/`` entry was written (storage's clock)."""

    job_id: str
    written: datetime | None


class GroupNotFoundError(HasteError):
    """No group with this id."""


class GroupStore:
    def __init__(
        self,
        container: ContainerClient,
        *,
        max_attempts: int = 40,
        sleep: Callable[[float], None] = time.sleep,
        draw: Callable[[], float] = random.random,
    ) -> None:
        self._container = container
        self._max_attempts = max_attempts
        self._sleep = sleep  # the wait between tries after a lost ETag check (utils/backoff.py)
        self._draw = draw

    @staticmethod
    def document_name(group_id: str) -> str:
        return f"groups/{group_id}.json"

    def create(self, group: Group, request: GroupRequest) -> Group | None:
        """Store the request, the open entry, then the document; None when a group with this id exists."""
        self._container.upload_blob(
            f"groups/{group.id}/request.json",
            request.model_dump_json(by_alias=True).encode(),
            overwrite=True,
            content_settings=_JSON,
        )
        self._container.upload_blob(OPEN + group.id, b"", overwrite=True)
        try:
            self._container.upload_blob(
                self.document_name(group.id), _dump(group), overwrite=False, content_settings=_JSON
            )
        except ResourceExistsError:
            return None
        return group

    def request(self, group_id: str) -> GroupRequest:
        data = self._container.download_blob(f"groups/{group_id}/request.json").readall()
        return GroupRequest.model_validate_json(data)

    def get(self, group_id: str) -> Group:
        """Raises GroupNotFoundError."""
        return self._read(group_id)[0]

    def find(self, group_id: str) -> Group | None:
        try:
            return self.get(group_id)
        except GroupNotFoundError:
            return None

    def update(self, group_id: str, change: Callable[[Group], Group | None]) -> tuple[Group, bool]:
        """Apply the pure ``change`` with If-Match; the group as stored and whether this call wrote it.

        After a lost ETag check (another writer was first) it waits a random, growing time
        (:func:`hastegeo.utils.backoff.tries`) and reads again.

        Raises GroupNotFoundError, ConflictError (it kept changing).
        """
        for _ in tries(self._max_attempts, sleep=self._sleep, draw=self._draw):
            current, etag = self._read(group_id)
            updated = change(current)
            if updated is None:
                return current, False
            try:
                self._container.get_blob_client(self.document_name(group_id)).upload_blob(
                    _dump(updated),
                    overwrite=True,
                    etag=etag,
                    match_condition=MatchConditions.IfNotModified,
                    content_settings=_JSON,
                )
            except ResourceModifiedError:
                continue
            return updated, True
        raise ConflictError(f"Group {group_id} changed too often to update; try again")

    def open_groups(self) -> list[str]:
        return [str(b.name).removeprefix(OPEN) for b in self._container.list_blobs(name_starts_with=OPEN)]

    def close(self, group_id: str) -> None:
        with contextlib.suppress(ResourceNotFoundError):
            self._container.delete_blob(OPEN + group_id)

    def reopen(self, group_id: str) -> None:
        self._container.upload_blob(OPEN + group_id, b"", overwrite=True)

    # -- dependencies ------------------------------------------------------------------

    def add_dependent(self, upstream: str, dependent: str) -> None:
        self._container.upload_blob(f"{AFTER}{upstream}/{dependent}", b"", overwrite=True)

    def dependents(self, upstream: str, *, after: str | None = None, size: int = 100) -> tuple[list[Listed], bool]:
        """Up to ``size`` jobs waiting for ``upstream``, in name order from the one after ``after``, each with
        when its entry was written; and whether more follow. One listing call: a release reads its dependents
        a chunk at a time (ADR 0047)."""
        prefix = f"{AFTER}{upstream}/"
        blobs = self._container.list_blobs(
            name_starts_with=prefix, start_from=prefix + after if after else None, results_per_page=size + 2
        )
        listed = [
            Listed(name, b.last_modified)
            for b in islice(blobs, size + 2)
            if (name := str(b.name).removeprefix(prefix)) != after
        ]
        return listed[:size], len(listed) > size

    def first_dependents(self, upstream: str, limit: int) -> tuple[list[str], bool]:
        """At most ``limit`` of the jobs waiting for ``upstream`` (one listing call), and whether there are more."""
        prefix = f"{AFTER}{upstream}/"
        pages = self._container.list_blobs(name_starts_with=prefix, results_per_page=limit).by_page()
        page = next(pages, None)
        names = [str(b.name).removeprefix(prefix) for b in page] if page is not None else []
        return names[:limit], bool(getattr(pages, "continuation_token", None)) or len(names) > limit

    def _read(self, group_id: str) -> tuple[Group, str]:
        try:
            downloader = self._container.download_blob(self.document_name(group_id))
        except ResourceNotFoundError:
            raise GroupNotFoundError(group_id) from None
        return Group.model_validate(json.loads(downloader.readall())), str(downloader.properties.etag)


def _dump(group: Group) -> bytes:
    return group.model_dump_json(by_alias=True).encode()
