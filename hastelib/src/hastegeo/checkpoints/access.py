"""How a job's runtime reaches its checkpoint copy: the storage access each backend gives it.

The spec carries locations, never credentials; the backend adds the access its nodes have:

- the local backend's workloads run on the host's machine, under the host's account: they get the
  storage access the host has, as a connection string in their process environment (never in the
  spec, which is stored and shown). A credential that is not a shared key gives them none: those
  jobs then run without checkpoint copies, and their stderr says why (:func:`connection_env`);
- a Batch task and an Azure ML job get the account URL and the managed identity of their compute
  (:func:`identity_env`): the pool's user-assigned identity by its resource id, or on Azure ML
  ``compute``, the identity the cluster gives its jobs (ADR 0044).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from hastegeo.checkpoints.layout import ACCOUNT_URL_VARIABLE, BLOB_VARIABLE, CONNECTION_VARIABLE, IDENTITY_VARIABLE

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


def account_url(service: BlobServiceClient) -> str:
    """``service``'s account URL without a query or a trailing slash (an emulator's keeps its account path)."""
    parts = urlsplit(str(service.url))
    return f"{parts.scheme}://{parts.netloc}{parts.path}".rstrip("/")


def identity_env(spec_env: Mapping[str, str], blob_account_url: str, identity: str) -> dict[str, str]:
    """The account URL and ``identity`` a node's runtime copies checkpoints with; empty for a spec that names
    no checkpoint location (or no account to reach it in)."""
    if BLOB_VARIABLE not in spec_env or not blob_account_url:
        return {}
    return {ACCOUNT_URL_VARIABLE: blob_account_url, IDENTITY_VARIABLE: identity}
