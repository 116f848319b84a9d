"""How a node that has no managed identity of its own reaches the checkpoint copy: the host's own access.

The local backend's workloads run on the host's machine, under the host's account: they get the
storage access the host has, as a connection string in their process environment (never in the
spec, which is stored and shown). A credential that is not a shared key gives them none: those
jobs then run without checkpoint copies, and their stderr says why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hastegeo.checkpoints.layout import CONNECTION_VARIABLE

if TYPE_CHECKING:
    from azure.storage.blob import BlobServiceClient


def connection_env(service: BlobServiceClient) -> dict[str, str]:
    """``{HASTE_CHECKPOINT_CONNECTION_STRING: …}`` for ``service``'s account and key; empty without a key."""
    credential = service.credential
    name, key = getattr(credential, "account_name", None), getattr(credential, "account_key", None)
    if not name or not key:
        return {}
    endpoint = str(service.url).rstrip("/")
    return {CONNECTION_VARIABLE: f"BlobEndpoint={endpoint};AccountName={name};AccountKey={key}"}
