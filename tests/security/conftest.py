"""Fixtures for the security suite: a runtime on the session's Azurite, and one shared LocalStack."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
from azure.storage.blob import BlobServiceClient, ContainerClient
from azure.storage.queue import QueueClient

from hastegeo_dev.stack import LocalStack

STACK_JOBS_CONTAINER = "haste-jobs"
STACK_INPUTS_CONTAINER = "haste-inputs"


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    """One Azurite + development host for the whole security suite (start-up costs seconds).

    The host believes the principal a request sends (``HASTE_DEV_TRUST_CLIENT_PRINCIPAL``): these tests
    act as several callers, as App Service would pass them; a request that sends none is the default admin.
    """
    settings = {
        "HASTE_LOCAL_SLOTS": "2",
        "HASTE_POLL_INITIAL_S": "1",
        "HASTE_POLL_MAX_S": "2",
        "HASTE_DEV_TRUST_CLIENT_PRINCIPAL": "true",
    }
    with LocalStack(tmp_path_factory.mktemp("security-stack"), settings=settings, lease_seconds=5) as running:
        yield running


def stack_container(stack: LocalStack, name: str = STACK_JOBS_CONTAINER) -> ContainerClient:
    return BlobServiceClient.from_connection_string(stack.azurite.connection_string).get_container_client(name)


def stack_queue(stack: LocalStack, name: str) -> QueueClient:
    return QueueClient.from_connection_string(stack.azurite.connection_string, name)


def wait_until(condition: Callable[[], bool], timeout: float, what: str, interval: float = 0.2) -> None:
    """Poll ``condition`` until it holds; fail with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)
