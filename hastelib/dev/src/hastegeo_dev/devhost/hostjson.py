"""Read the parts of ``host.json`` that the development host honours.

The deployed app gets its queue semantics (batch size, visibility timeout,
dequeue count, polling interval, encoding) and its HTTP route prefix from
``host.json``. The development host must read the same file with the same
defaults as the Azure Functions host, or local runs would behave differently
from production. Parsing is pure and validated: a typo'd value fails at
start-up with the key path, instead of silently falling back to a default.

Keys read (everything else in the file is ignored)::

    version                              "2.0" if present
    extensions.http.routePrefix          default "api"
    extensions.queues.batchSize          default 16, 1..32
    extensions.queues.newBatchThreshold  default batchSize // 2
    extensions.queues.maxPollingInterval default "00:01:00", >= 100 ms
    extensions.queues.visibilityTimeout  default "00:00:00"
    extensions.queues.maxDequeueCount    default 5, >= 1
    extensions.queues.messageEncoding    default "base64"; "base64" | "none"
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

MessageEncoding = Literal["base64", "none"]

# .NET TimeSpan text: [d.]hh:mm:ss[.fffffff]
_TIMESPAN = re.compile(r"(?:(?P<days>\d+)\.)?(?P<h>\d{1,2}):(?P<m>\d{1,2}):(?P<s>\d{1,2})(?:\.(?P<frac>\d{1,7}))?")


class HostJsonError(ValueError):
    """host.json is unreadable or holds an invalid value (the message names the key)."""


@dataclass(frozen=True)
class QueueSettings:
    """``extensions.queues``: how queue-triggered functions are driven."""

    batch_size: int = 16
    new_batch_threshold: int = 8
    max_polling_interval: timedelta = timedelta(minutes=1)
    visibility_timeout: timedelta = timedelta(0)
    max_dequeue_count: int = 5
    message_encoding: MessageEncoding = "base64"


@dataclass(frozen=True)
class HostConfig:
    """The honoured subset of host.json."""

    route_prefix: str = "api"
    queues: QueueSettings = QueueSettings()


def parse_timespan(value: object, key: str) -> timedelta:
    """Parse a .NET TimeSpan string (``"00:00:02"``, ``"1.00:00:00"``, ``"00:00:00.250"``).

    Raises HostJsonError naming ``key`` for anything else (numbers included:
    their unit differed between host versions).
    """
    if not isinstance(value, str):
        raise HostJsonError(f"{key}: expected a TimeSpan string like '00:00:30', got {value!r}")
    match = _TIMESPAN.fullmatch(value.strip())
    if match is None:
        raise HostJsonError(f"{key}: expected a TimeSpan string like '00:00:30', got {value!r}")
    hours, minutes, seconds = int(match["h"]), int(match["m"]), int(match["s"])
    if hours > 23 or minutes > 59 or seconds > 59:
        raise HostJsonError(f"{key}: TimeSpan component out of range in {value!r}")
    frac = match["frac"] or "0"
    microseconds = round(int(frac.ljust(7, "0")) / 10)
    return timedelta(
        days=int(match["days"] or 0), hours=hours, minutes=minutes, seconds=seconds, microseconds=microseconds
    )


def _int(section: Mapping[str, Any], name: str, key: str, default: int, low: int, high: int | None = None) -> int:
    value = section.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise HostJsonError(f"{key}.{name}: expected an integer, got {value!r}")
    if value < low or (high is not None and value > high):
        bounds = f"between {low} and {high}" if high is not None else f">= {low}"
        raise HostJsonError(f"{key}.{name}: must be {bounds}, got {value}")
    return value


def _section(parent: Mapping[str, Any], name: str, key: str) -> Mapping[str, Any]:
    value = parent.get(name, {})
    if not isinstance(value, Mapping):
        raise HostJsonError(f"{key}: expected an object, got {type(value).__name__}")
    return value


def parse_queue_settings(section: Mapping[str, Any], key: str = "extensions.queues") -> QueueSettings:
    """Validate ``extensions.queues`` and fill the Functions defaults."""
    batch_size = _int(section, "batchSize", key, 16, 1, 32)
    threshold = _int(section, "newBatchThreshold", key, batch_size // 2, 0)
    polling = parse_timespan(section.get("maxPollingInterval", "00:01:00"), f"{key}.maxPollingInterval")
    if polling < timedelta(milliseconds=100):
        raise HostJsonError(f"{key}.maxPollingInterval: must be at least 00:00:00.100")
    visibility = parse_timespan(section.get("visibilityTimeout", "00:00:00"), f"{key}.visibilityTimeout")
    max_dequeue = _int(section, "maxDequeueCount", key, 5, 1)
    encoding = section.get("messageEncoding", "base64")
    if not isinstance(encoding, str) or encoding.lower() not in ("base64", "none"):
        raise HostJsonError(f"{key}.messageEncoding: expected 'base64' or 'none', got {encoding!r}")
    return QueueSettings(
        batch_size=batch_size,
        new_batch_threshold=threshold,
        max_polling_interval=polling,
        visibility_timeout=visibility,
        max_dequeue_count=max_dequeue,
        message_encoding="none" if encoding.lower() == "none" else "base64",
    )


def parse_host_config(document: Mapping[str, Any]) -> HostConfig:
    """Validate a parsed host.json document and return the honoured settings with defaults."""
    if not isinstance(document, Mapping):
        raise HostJsonError("host.json: expected a JSON object at the top level")
    version = document.get("version")
    if version is not None and version != "2.0":
        raise HostJsonError(f"version: expected '2.0', got {version!r}")
    extensions = _section(document, "extensions", "extensions")
    http = _section(extensions, "http", "extensions.http")
    prefix = http.get("routePrefix", "api")
    if not isinstance(prefix, str):
        raise HostJsonError(f"extensions.http.routePrefix: expected a string, got {prefix!r}")
    queues = parse_queue_settings(_section(extensions, "queues", "extensions.queues"))
    return HostConfig(route_prefix=prefix.strip("/"), queues=queues)


def load_host_config(path: str | Path | None) -> HostConfig:
    """Read host.json at ``path``; ``None`` gives the defaults. Raises HostJsonError."""
    if path is None:
        return HostConfig()
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise HostJsonError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise HostJsonError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}") from exc
    return parse_host_config(document)
