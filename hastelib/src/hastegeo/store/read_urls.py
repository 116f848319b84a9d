"""Short-lived, read-only URLs for one output blob, made on request and never stored.

A URL is signed for a single blob, read permission only, valid for
:data:`READ_URL_TTL` — never a container-wide or long-lived SAS. With identity
(production) it is a user-delegation SAS; with a connection string
(development) an account-key SAS. The job document, the history and the logs
never hold one.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from azure.storage.blob import BlobSasPermissions, BlobServiceClient, generate_blob_sas

READ_URL_TTL = timedelta(minutes=15)


def read_url(service: BlobServiceClient, container: str, blob: str, now: datetime) -> str:
    """A URL that reads ``container/blob`` until ``now + READ_URL_TTL``."""
    expiry = now + READ_URL_TTL
    start = now - timedelta(minutes=5)  # tolerate clock skew
    account_key = getattr(service.credential, "account_key", None)
    signing: dict[str, Any] = (
        {"account_key": account_key}
        if account_key
        else {"user_delegation_key": service.get_user_delegation_key(start, expiry)}
    )
    signature = generate_blob_sas(
        account_name=str(service.account_name),
        container_name=container,
        blob_name=blob,
        permission=BlobSasPermissions(read=True),
        expiry=expiry,
        start=start,
        **signing,
    )
    return f"{service.get_blob_client(container, blob).url}?{signature}"
