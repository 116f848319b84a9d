"""Storage clients built with ``transport_options`` read the environment once, at construction.

A proxy set after a client exists no longer reroutes its calls (so no call walks the
environment); one set before is honoured, as requests always did.
"""

from __future__ import annotations

import os

import pytest
from azure.core.exceptions import ServiceRequestError
from azure.storage.blob import BlobServiceClient, ExponentialRetry

from hastegeo.runtime import transfer_client
from hastegeo.utils.transport import transport_options
from hastegeo_dev.devhost.azurite import Azurite

pytestmark = pytest.mark.azurite

DEAD_PROXY = "http://127.0.0.1:9"  # the discard port: nothing listens there


@pytest.fixture
def no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in list(os.environ):
        if name.lower().endswith("_proxy"):
            monkeypatch.delenv(name)
    return monkeypatch


def _client(azurite: Azurite) -> BlobServiceClient:
    return BlobServiceClient.from_connection_string(
        azurite.connection_string, retry_total=0, connection_timeout=2, **transport_options(os.environ)
    )


def test_a_client_does_not_read_the_environment_per_call(azurite: Azurite, no_proxy_env: pytest.MonkeyPatch) -> None:
    client = _client(azurite)
    no_proxy_env.setenv("HTTP_PROXY", DEAD_PROXY)
    no_proxy_env.setenv("http_proxy", DEAD_PROXY)
    assert client.get_service_properties() is not None  # straight to Azurite, not through the dead proxy


def test_a_proxy_in_the_environment_is_still_honoured(azurite: Azurite, no_proxy_env: pytest.MonkeyPatch) -> None:
    no_proxy_env.setenv("HTTP_PROXY", DEAD_PROXY)
    no_proxy_env.setenv("http_proxy", DEAD_PROXY)
    with pytest.raises(ServiceRequestError):
        _client(azurite).get_service_properties()


def test_the_transfer_client_is_built_like_every_other(azurite: Azurite, no_proxy_env: pytest.MonkeyPatch) -> None:
    """The local backend's staging and upload client gets the same options as the pipeline's clients."""
    blobs = BlobServiceClient.from_connection_string(azurite.connection_string)
    client = transfer_client(blobs, ExponentialRetry(retry_total=0))
    no_proxy_env.setenv("HTTP_PROXY", DEAD_PROXY)
    no_proxy_env.setenv("http_proxy", DEAD_PROXY)
    assert client.get_service_properties() is not None
