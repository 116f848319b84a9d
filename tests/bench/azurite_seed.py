"""Seed blobs into a stopped Azurite's files: the fast path for ``make bench-scale``.

Azurite (3.x, disk persistence) keeps blob metadata in a LokiJS database
(``__azurite_db_blob__.json``) and blob bytes in extent files (``__blobstorage__``),
and loads both at start-up. Through HTTP it takes ~3 ms of its single thread per
upload, so 300,000 blobs (100,000 finished jobs) take well over ten minutes on a shared
2-core machine; appended to these files they take seconds. The records copy one that
Azurite itself wrote (so every field it expects is there), with their own name, bytes,
MD5, ETag, metadata and place in one new extent; the indices LokiJS keeps (positions
sorted by account, container, name and snapshot) are rebuilt here. Stop Azurite before, start it after.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import os
import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

DB = "__azurite_db_blob__.json"
EXTENT_DB = "__azurite_db_blob_extent__.json"
EXTENTS = "__blobstorage__"


def _collection(db: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in db["collections"] if c["name"] == name)


def append_blobs(location: Path, container: str, blobs: Iterable[tuple[str, bytes, dict[str, str], str]]) -> int:
    """Append ``(name, body, metadata, content type)`` blobs to ``container``; returns how many.

    The container must already hold at least one blob written by Azurite (the template).
    """
    db = json.loads((location / DB).read_text())
    records = _collection(db, "$BLOBS_COLLECTION$")
    template = next(r for r in records["data"] if r["containerName"] == container and r["properties"]["contentLength"])
    extent_id = str(uuid.uuid4())
    now_ms = int(time.time() * 1000)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    offset, added, next_id = 0, 0, records["maxId"] + 1
    with (location / EXTENTS / extent_id).open("wb") as extent:
        for name, body, metadata, content_type in blobs:
            record = copy.deepcopy(template)
            record.update(
                name=name,
                metadata=metadata or None,
                persistency={"id": extent_id, "offset": offset, "count": len(body)},
            )
            record["meta"] = {"revision": 0, "created": now_ms, "version": 0}
            record["$loki"] = next_id
            digest = hashlib.md5(body).digest()  # noqa: S324 - the Content-MD5 storage records, not security
            properties = record["properties"]
            properties.update(
                creationTime=stamp,
                lastModified=stamp,
                accessTierChangeTime=stamp,
                etag=f'"0x{base64.b16encode(os.urandom(8)).decode()[:15]}"',
                contentLength=len(body),
                contentType=content_type,
                contentMD5={str(i): b for i, b in enumerate(digest)},
            )
            if not metadata:
                record.pop("metadata", None)
            records["data"].append(record)
            extent.write(body)
            offset, added, next_id = offset + len(body), added + 1, next_id + 1
    first = records["maxId"] + 1
    records["maxId"] = next_id - 1
    if isinstance(records.get("idIndex"), list):
        records["idIndex"].extend(range(first, next_id))
    data = records["data"]
    for field, index in records["binaryIndices"].items():  # positions sorted by the field, as LokiJS keeps them
        index["dirty"] = False
        index["values"] = sorted(range(len(data)), key=lambda i, f=field: (str(data[i].get(f) or ""), i))
    (location / DB).write_text(json.dumps(db))
    extent_db = json.loads((location / EXTENT_DB).read_text())
    extents = _collection(extent_db, "$EXTENTS_COLLECTION$")
    extents["maxId"] += 1
    extents["data"].append(
        {
            "id": extent_id,
            "locationId": "Default",
            "path": extent_id,
            "size": offset,
            "lastModifiedInMS": now_ms,
            "meta": {"revision": 0, "created": now_ms, "version": 0},
            "$loki": extents["maxId"],
        }
    )
    if isinstance(extents.get("idIndex"), list):
        extents["idIndex"].append(extents["maxId"])
    known = extents["data"]
    extents["binaryIndices"]["id"].update(
        dirty=False, values=sorted(range(len(known)), key=lambda i: (known[i]["id"], i))
    )
    (location / EXTENT_DB).write_text(json.dumps(extent_db))
    return added
