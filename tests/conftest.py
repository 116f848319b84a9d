"""Session-wide fixtures: one Azurite per test session, on ports the OS picks."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from hastegeo.devhost.azurite import Azurite


@pytest.fixture(scope="session")
def azurite() -> Iterator[Azurite]:
    """A real Azurite (blob + queue) for the whole session, data in memory."""
    with Azurite(in_memory=True) as emulator:
        yield emulator


@pytest.fixture
def unique() -> str:
    """A short unique token for names (containers, queues) so tests never collide."""
    return uuid.uuid4().hex[:10]


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """Remove every setting the project reads, so a test sees only what it sets."""
    for key in list(os.environ):
        if key.startswith(("HASTE_", "BATCH_", "AML_", "AzureWebJobs")):
            monkeypatch.delenv(key)
    return monkeypatch
