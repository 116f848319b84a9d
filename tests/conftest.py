"""Session-wide fixtures: one Azurite per test session, on ports the OS picks."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hastegeo.runtime import Runtime
from hastegeo.settings.load import load_settings
from hastegeo_dev.devhost.azurite import Azurite
from tests.support.runtime import development_runtime
from tests.support.storage import isolated_storage

RuntimeFactory = Callable[..., Runtime]

# How tests are shared among pytest-xdist workers, and the chaos table (printed by the process that reports).
pytest_plugins = ["tests.workers", "tests.chaos.table"]


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


@pytest.fixture
def make_runtime(azurite: Azurite, tmp_path: Path, unique: str) -> Iterator[RuntimeFactory]:
    """Build pipeline runtimes on the session's Azurite, isolated per test by container names."""
    built: list[Runtime] = []

    def factory(**overrides: str) -> Runtime:
        env = {
            **isolated_storage(azurite.connection_string, unique),
            "HASTE_LOCAL_ROOT": str(tmp_path / "local"),
            "HASTE_LOCAL_SLOTS": "2",
            "HASTE_POLL_INITIAL_S": "1",
            **overrides,
        }
        runtime = development_runtime(load_settings(env))
        built.append(runtime)
        return runtime

    yield factory
    for runtime in built:
        for adapter in runtime.registry.built().values():
            adapter.close()


@pytest.fixture
def api_settings(
    azurite: Azurite, clean_env: pytest.MonkeyPatch, unique: str, tmp_path: Path
) -> Iterator[Callable[..., None]]:
    """Point the process-wide runtime (what the Functions code uses) at the session's Azurite.

    Call it with extra settings; the runtime is rebuilt from them, and closed after the test.
    """
    from hastegeo.runtime import ensure_storage, get_runtime, reset_runtime
    from hastegeo.settings.load import get_settings

    def apply(**overrides: str) -> None:
        settings = {
            **isolated_storage(azurite.connection_string, unique),
            "HASTE_LOCAL_ROOT": str(tmp_path / "local"),
            **overrides,
        }
        for name, value in settings.items():
            clean_env.setenv(name, value)
        get_settings.cache_clear()
        reset_runtime()
        ensure_storage(get_settings())  # as IaC does in Azure: the deployed app creates nothing
        applied.append(True)

    applied: list[bool] = []
    yield apply
    if applied:
        for adapter in get_runtime().registry.built().values():
            adapter.close()
    reset_runtime()
    get_settings.cache_clear()
