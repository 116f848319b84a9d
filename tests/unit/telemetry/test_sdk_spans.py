"""The pipeline's azure-core plugin enters once per SDK call: a traced operation inside it is not traced again.

The spans it records are compared with the stock plugin's through real SDK calls in
``tests/integration/test_telemetry_sampling.py``; here, what it saves, which that comparison cannot show.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from azure.core.settings import settings
from azure.core.tracing.decorator import distributed_trace
from azure.core.tracing.ext.opentelemetry_span import OpenTelemetrySpan

from hastegeo.telemetry.sdk_spans import SdkSpan


class Operations:
    """Stands for a generated operation group: traced itself."""

    @distributed_trace
    def upload(self, fail: bool = False) -> str:
        if fail:
            raise ValueError("refused")
        return "uploaded"


class Client:
    """Stands for a storage client: a traced method calling a traced operation."""

    operations = Operations()

    @distributed_trace
    def upload_blob(self, fail: bool = False) -> str:
        return self.operations.upload(fail)


def counting(plugin: type[OpenTelemetrySpan]) -> tuple[type[OpenTelemetrySpan], list[str]]:
    started: list[str] = []

    class Counted(plugin):  # type: ignore[valid-type,misc]
        def __init__(self, *args: object, **kwargs: object) -> None:
            started.append(str(kwargs.get("name")))
            super().__init__(*args, **kwargs)

    return Counted, started


@pytest.fixture
def tracing_plugin() -> Iterator[None]:
    """Restores azure-core's process-wide tracing setting after the test."""
    try:
        yield
    finally:
        settings.tracing_implementation.unset_value()


@pytest.mark.usefixtures("tracing_plugin")
@pytest.mark.parametrize(("plugin", "entered"), [(OpenTelemetrySpan, 2), (SdkSpan, 1)])
def test_one_sdk_call_enters_the_plugin_once(plugin: type[OpenTelemetrySpan], entered: int) -> None:
    counted, started = counting(plugin)
    settings.tracing_implementation = counted
    assert Client().upload_blob() == "uploaded"
    assert len(started) == entered  # the stock plugin starts the operation's span too, to record nothing
    assert started[0] == "Client.upload_blob"


@pytest.mark.usefixtures("tracing_plugin")
def test_after_a_call_and_after_a_failed_one_the_next_call_is_traced_again() -> None:
    counted, started = counting(SdkSpan)
    settings.tracing_implementation = counted
    with pytest.raises(ValueError, match="refused"):
        Client().upload_blob(fail=True)
    assert Operations().upload() == "uploaded"  # called on its own, outside any SDK call: its own span
    assert started == ["Client.upload_blob", "Operations.upload"]
