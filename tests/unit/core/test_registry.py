"""The backend registry: lazy, cached, classified errors, and no construction under its lock."""

from __future__ import annotations

import sys
import threading
from collections import defaultdict
from typing import Any

import pytest

from hastegeo.compute.context import BackendContext
from hastegeo.compute.descriptor import BackendDescriptor, lazy_factory
from hastegeo.compute.registry import BackendRegistry
from hastegeo.utils.errors import BackendUnavailableError, ConfigurationError

CONTEXT: Any = BackendContext(settings=None, blob_service=None)  # type: ignore[arg-type]
CONTEXTS: Any = defaultdict(lambda: CONTEXT)  # every backend is given the same one


class Dummy:
    name = "dummy"

    def __init__(self, context: BackendContext) -> None:
        self.context = context


def test_unknown_and_disabled_backends_are_classified() -> None:
    registry = BackendRegistry([BackendDescriptor("local", Dummy)], enabled=[], contexts=CONTEXTS)
    with pytest.raises(BackendUnavailableError, match="Unknown backend 'nope'"):
        registry.get("nope")
    with pytest.raises(BackendUnavailableError, match="not enabled"):
        registry.get("local")


def test_adapter_is_built_once_and_cached() -> None:
    built: list[Dummy] = []

    def factory(context: BackendContext) -> Dummy:
        built.append(Dummy(context))
        return built[-1]

    registry = BackendRegistry([BackendDescriptor("local", factory)], enabled=["local"], contexts=CONTEXTS)
    assert registry.get("local") is registry.get("local")
    assert len(built) == 1
    assert built[0].context is CONTEXT


def test_provider_module_is_imported_only_when_first_used() -> None:
    module = "hastegeo.compute.azure_ml.adapter"
    sys.modules.pop(module, None)
    registry = BackendRegistry(
        [BackendDescriptor("azure_ml", lazy_factory(f"{module}:create"))], enabled=["azure_ml"], contexts=CONTEXTS
    )
    assert module not in sys.modules
    assert registry.enabled == frozenset({"azure_ml"})


def test_unloadable_factory_is_a_configuration_error() -> None:
    registry = BackendRegistry(
        [BackendDescriptor("x", lazy_factory("no.such.module:create"))], enabled=["x"], contexts=CONTEXTS
    )
    with pytest.raises(ConfigurationError, match="cannot be loaded"):
        registry.get("x")


def test_failing_constructor_is_a_configuration_error() -> None:
    def broken(context: BackendContext) -> Dummy:
        raise RuntimeError("no credentials")

    registry = BackendRegistry([BackendDescriptor("x", broken)], enabled=["x"], contexts=CONTEXTS)
    with pytest.raises(ConfigurationError, match="failed to start: RuntimeError: no credentials"):
        registry.get("x")


def test_constructor_runs_outside_the_lock() -> None:
    """A slow constructor for one backend must not block another backend's lookup."""
    release = threading.Event()
    entered = threading.Event()

    def slow(context: BackendContext) -> Dummy:
        entered.set()
        assert release.wait(5)
        return Dummy(context)

    registry = BackendRegistry(
        [BackendDescriptor("slow", slow), BackendDescriptor("fast", Dummy)], enabled=["slow", "fast"], contexts=CONTEXTS
    )
    worker = threading.Thread(target=registry.get, args=("slow",))
    worker.start()
    assert entered.wait(5)
    fast = registry.get("fast")  # would deadlock if "slow" were built under the lock
    release.set()
    worker.join(5)
    assert isinstance(fast, Dummy)
    assert isinstance(registry.get("slow"), Dummy)


def test_reentrant_constructor_does_not_deadlock() -> None:
    registry: BackendRegistry

    def needs_other(context: BackendContext) -> Dummy:
        registry.get("fast")
        return Dummy(context)

    registry = BackendRegistry(
        [BackendDescriptor("outer", needs_other), BackendDescriptor("fast", Dummy)],
        enabled=["outer", "fast"],
        contexts=CONTEXTS,
    )
    assert isinstance(registry.get("outer"), Dummy)


def test_the_local_backend_refuses_to_start_inside_azure_functions_unless_allowed(tmp_path: Any) -> None:
    """The production factory, built through the registry as the pipeline builds it."""
    from azure.storage.blob import BlobServiceClient

    from hastegeo.compute.catalog import descriptors
    from hastegeo.compute.local.adapter import LocalBackend
    from hastegeo.settings.load import load_settings

    env = {
        "AzureWebJobsStorage": "UseDevelopmentStorage=true",
        "HASTE_LOCAL_ROOT": str(tmp_path / "local"),
        "WEBSITE_SITE_NAME": "func-haste",  # what the Functions platform sets (Linux/Flex)
        "FUNCTIONS_WORKER_RUNTIME": "python",
    }
    blobs = BlobServiceClient.from_connection_string("UseDevelopmentStorage=true")  # never called here

    def registry(**extra: str) -> BackendRegistry:
        context = BackendContext(settings=load_settings({**env, **extra}).backend("local"), blob_service=blobs)
        return BackendRegistry([descriptors()["local"]], enabled=["local"], contexts={"local": context})

    with pytest.raises(ConfigurationError, match="HASTE_LOCAL_ALLOW_IN_AZURE=true") as raised:
        registry().get("local")
    assert str(raised.value).startswith("The local backend refuses to start: ")
    assert not (tmp_path / "local").exists()  # refused before it touched anything
    allowed = registry(HASTE_LOCAL_ALLOW_IN_AZURE="true").get("local")
    assert isinstance(allowed, LocalBackend)
    allowed.close()
