"""Who runs a command: the sign-in ``haste`` and ``haste doctor`` share."""

from __future__ import annotations

import sys

from azure.core.credentials import TokenCredential


def sign_in_credential(interactive: bool | None = None) -> TokenCredential:
    """Who runs the command, in the order a script, then a person, would have signed in.

    A service principal or workload identity in the environment (``AZURE_CLIENT_ID`` and
    its partners: CI), then the Azure CLI's sign-in (``az login``), then azd's. A device
    code sign-in comes last and only when a person is at the terminal (``interactive``;
    by default: stdin and stderr are terminals): a script or a CI job with no sign-in
    fails at once, saying what to run, instead of waiting for a code nobody will enter.
    The device code flow uses the Azure CLI's client id, which the API's app registration
    pre-authorises (infra/scripts/app-registration.sh), so no consent prompt appears.
    """
    from azure.identity import (
        AzureCliCredential,
        AzureDeveloperCliCredential,
        ChainedTokenCredential,
        DeviceCodeCredential,
        EnvironmentCredential,
    )

    if interactive is None:
        interactive = sys.stdin.isatty() and sys.stderr.isatty()
    chain: list[TokenCredential] = [EnvironmentCredential(), AzureCliCredential(), AzureDeveloperCliCredential()]
    if interactive:
        chain.append(DeviceCodeCredential())
    return ChainedTokenCredential(*chain)
