"""The Azure credential an adapter signs in with, chosen by its identity-mode setting (one choice for every backend).

``AML_IDENTITY_MODE`` and ``BATCH_AUTH_MODE`` both say ``managed_identity``
(production: the app's identity, user-assigned when a client id is set) or
``default`` (``DefaultAzureCredential``: a CLI login or environment variables).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from azure.core.credentials import TokenCredential


def azure_credential(mode: str, client_id: str = "") -> TokenCredential:
    """``default``: DefaultAzureCredential; otherwise the managed identity (system-assigned when ``client_id`` is
    empty). Makes no request; azure-identity is imported here so only a backend that signs in pays for it."""
    from azure.identity import DefaultAzureCredential, ManagedIdentityCredential

    if mode == "default":
        return DefaultAzureCredential()
    return ManagedIdentityCredential(client_id=client_id or None)
