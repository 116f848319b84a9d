"""Find the functions of an ``azure.functions.FunctionApp`` and call them like the worker does.

The deployed app is indexed by the Azure Functions Python worker (v2
programming model). The development host must see the same functions: it
imports the same ``function_app:app``, reads each function's trigger from
``get_functions()`` and calls ``get_user_function()`` with the same
arguments the worker would pass (the trigger value under its binding name,
``context`` when the handler asks for it, ``func.Out`` objects for queue
output bindings). Triggers other than HTTP and queue are skipped with a
warning rather than half-emulated.
"""

from __future__ import annotations

import asyncio
import copy
import importlib
import inspect
import logging
import sys
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import azure.functions as func

log = logging.getLogger(__name__)

DEFAULT_CONNECTION = "AzureWebJobsStorage"


class DevHostError(RuntimeError):
    """The app cannot be loaded or hosted (bad module path, unsupported setup, missing setting)."""


class FunctionRegistry(Protocol):
    def get_functions(self) -> list[Any]: ...


@dataclass(frozen=True)
class QueueOutput:
    """A ``queue`` output binding: values set on the ``func.Out`` are sent after the function succeeds."""

    arg_name: str
    queue_name: str
    connection: str


@dataclass(frozen=True)
class HttpFunction:
    name: str
    route: str
    methods: tuple[str, ...] | None  # None: every method
    auth_level: str
    arg_name: str
    handler: Callable[..., Any]
    outputs: tuple[QueueOutput, ...] = ()


@dataclass(frozen=True)
class QueueFunction:
    name: str
    queue_name: str
    connection: str
    arg_name: str
    handler: Callable[..., Any]
    outputs: tuple[QueueOutput, ...] = ()


@dataclass(frozen=True)
class TimerSpec:
    name: str
    schedule: str
    arg_name: str
    handler: Callable[..., Any]
    run_on_startup: bool = False


@dataclass(frozen=True)
class AppFunctions:
    http: tuple[HttpFunction, ...] = ()
    queues: tuple[QueueFunction, ...] = ()
    timers: tuple[TimerSpec, ...] = ()


def _plain(value: Any) -> Any:
    """Enum members (HttpMethod.GET, AuthLevel.FUNCTION) to their string values."""
    return getattr(value, "value", value)


def load_app(spec: str = "function_app:app", app_dir: str | Path | None = None) -> FunctionRegistry:
    """Import ``module[:attribute]`` (attribute defaults to ``app``), with ``app_dir`` first on sys.path.

    Raises DevHostError when the module or attribute is missing or is not a FunctionApp.
    """
    module_name, _, attribute = spec.partition(":")
    attribute = attribute or "app"
    if app_dir is not None:
        root = str(Path(app_dir).resolve())
        if root not in sys.path:
            sys.path.insert(0, root)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            raise DevHostError(f"cannot import {module_name!r} (is --app-dir right?)") from exc
        raise
    app = getattr(module, attribute, None)
    if app is None or not callable(getattr(app, "get_functions", None)):
        raise DevHostError(f"{spec}: {attribute!r} is not an azure.functions.FunctionApp")
    return app  # type: ignore[no-any-return]


def _queue_outputs(bindings: list[dict[str, Any]], function_name: str) -> tuple[QueueOutput, ...] | None:
    outputs = []
    for binding in bindings:
        kind, direction = binding.get("type"), _plain(binding.get("direction"))
        if kind == "http" and binding.get("name") == "$return":
            continue
        if kind == "queue" and direction in (1, "out"):
            connection = binding.get("connection") or DEFAULT_CONNECTION
            outputs.append(QueueOutput(binding["name"], binding["queueName"], connection))
            continue
        log.warning("skipping function %s: the development host does not support %s bindings", function_name, kind)
        return None
    return tuple(outputs)


def _index(app: FunctionRegistry) -> list[Any]:
    """``app.get_functions()`` on a shallow copy.

    A FunctionApp remembers the names it indexed and refuses a second
    ``get_functions()``; the platform indexes once per worker, but one process
    may start a host several times (tests) or a test may index it too. The
    copy has the same decorated functions without that memory.
    """
    indexed = copy.copy(app)
    if hasattr(indexed, "functions_bindings"):
        indexed.functions_bindings = {}
    return list(indexed.get_functions())


def discover(app: FunctionRegistry) -> AppFunctions:
    """The HTTP-, queue- and timer-triggered functions of ``app``; other triggers are skipped with a warning."""
    http: list[HttpFunction] = []
    queues: list[QueueFunction] = []
    timers: list[TimerSpec] = []
    for function in _index(app):
        name = function.get_function_name()
        trigger = function.get_trigger()
        spec = trigger.get_dict_repr() if trigger is not None else {}
        kind = spec.get("type")
        others = [b.get_dict_repr() for b in function.get_bindings() if b is not trigger]
        outputs = _queue_outputs(others, name)
        if outputs is None:
            continue
        handler = function.get_user_function()
        if kind == "httpTrigger":
            methods = spec.get("methods")
            http.append(
                HttpFunction(
                    name=name,
                    route=spec.get("route") or name,
                    methods=tuple(str(_plain(m)).upper() for m in methods) if methods else None,
                    auth_level=str(_plain(spec.get("authLevel", "function"))).lower(),
                    arg_name=spec["name"],
                    handler=handler,
                    outputs=outputs,
                )
            )
        elif kind == "queueTrigger":
            queues.append(
                QueueFunction(
                    name=name,
                    queue_name=spec["queueName"],
                    connection=spec.get("connection") or DEFAULT_CONNECTION,
                    arg_name=spec["name"],
                    handler=handler,
                    outputs=outputs,
                )
            )
        elif kind == "timerTrigger":
            timers.append(
                TimerSpec(
                    name=name,
                    schedule=str(spec["schedule"]),
                    arg_name=spec["name"],
                    handler=handler,
                    run_on_startup=bool(spec.get("runOnStartup", False)),
                )
            )
        else:
            log.warning("skipping function %s: the development host does not run %s triggers", name, kind)
    return AppFunctions(tuple(http), tuple(queues), tuple(timers))


class _TraceContext:
    """Empty trace context: there is no distributed tracing locally."""

    @property
    def trace_state(self) -> str:
        return ""

    @property
    def trace_parent(self) -> str:
        return ""

    @property
    def attributes(self) -> dict[str, str]:
        return {}


class _RetryContext:
    """No host-level retry policy locally: always the first try."""

    @property
    def retry_count(self) -> int:
        return 0

    @property
    def max_retry_count(self) -> int:
        return 0

    @property
    def exception(self) -> Any:
        return None


class DevContext(func.Context):
    """The ``context`` argument: invocation id and function name (no distributed tracing locally)."""

    _thread_local = threading.local

    def __init__(self, function_name: str, function_directory: str) -> None:
        self._invocation_id = str(uuid.uuid4())
        self._function_name = function_name
        self._function_directory = function_directory

    @property
    def invocation_id(self) -> str:
        return self._invocation_id

    @property
    def thread_local_storage(self) -> type[threading.local]:
        return self._thread_local

    @property
    def function_name(self) -> str:
        return self._function_name

    @property
    def function_directory(self) -> str:
        return self._function_directory

    @property
    def trace_context(self) -> Any:
        return _TraceContext()

    @property
    def retry_context(self) -> Any:
        return _RetryContext()


@dataclass
class OutValue(func.Out[Any]):
    """A ``func.Out`` that keeps what the function set."""

    value: Any = None
    was_set: bool = field(default=False)

    def set(self, val: Any) -> None:
        self.value, self.was_set = val, True

    def get(self) -> Any:
        return self.value


def invoke(
    handler: Callable[..., Any], function_name: str, arg_name: str, trigger_value: Any, outputs: Mapping[str, OutValue]
) -> Any:
    """Call ``handler`` as the worker would; ``async def`` handlers run to completion on this thread."""
    kwargs: dict[str, Any] = {arg_name: trigger_value, **outputs}
    if "context" in inspect.signature(handler).parameters and "context" not in kwargs:
        directory = str(Path(inspect.getfile(handler)).parent)
        kwargs["context"] = DevContext(function_name, directory)
    if inspect.iscoroutinefunction(handler):
        return asyncio.run(handler(**kwargs))
    result = handler(**kwargs)
    if inspect.isawaitable(result):
        return asyncio.run(_await(result))
    return result


async def _await(awaitable: Any) -> Any:
    return await awaitable
