"""host.json parsing: the Functions defaults, validation that names the key, TimeSpan forms."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from hastegeo_dev.devhost.hostjson import (
    HostConfig,
    HostJsonError,
    QueueSettings,
    load_host_config,
    parse_host_config,
    parse_timespan,
)


def test_defaults_match_the_functions_host() -> None:
    config = parse_host_config({"version": "2.0"})
    assert config == HostConfig()
    assert config.route_prefix == "api"
    assert config.queues == QueueSettings(
        batch_size=16,
        new_batch_threshold=8,
        max_polling_interval=timedelta(minutes=1),
        visibility_timeout=timedelta(0),
        max_dequeue_count=5,
        message_encoding="base64",
    )


def test_reads_the_honoured_keys() -> None:
    config = parse_host_config(
        {
            "version": "2.0",
            "logging": {"logLevel": {"default": "Information"}},
            "extensions": {
                "http": {"routePrefix": "/v1/"},
                "queues": {
                    "batchSize": 4,
                    "newBatchThreshold": 1,
                    "maxPollingInterval": "00:00:02",
                    "visibilityTimeout": "00:00:30",
                    "maxDequeueCount": 3,
                    "messageEncoding": "None",
                },
            },
        }
    )
    assert config.route_prefix == "v1"
    assert config.queues == QueueSettings(4, 1, timedelta(seconds=2), timedelta(seconds=30), 3, "none")


def test_new_batch_threshold_defaults_to_half_the_batch() -> None:
    assert parse_host_config({"extensions": {"queues": {"batchSize": 5}}}).queues.new_batch_threshold == 2


def test_empty_route_prefix_is_allowed() -> None:
    assert parse_host_config({"extensions": {"http": {"routePrefix": ""}}}).route_prefix == ""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("00:00:02", timedelta(seconds=2)),
        ("00:01:00", timedelta(minutes=1)),
        ("1.02:03:04", timedelta(days=1, hours=2, minutes=3, seconds=4)),
        ("00:00:00.250", timedelta(milliseconds=250)),
        ("00:00:00.1234567", timedelta(microseconds=123457)),
    ],
)
def test_timespan_forms(text: str, expected: timedelta) -> None:
    assert parse_timespan(text, "k") == expected


@pytest.mark.parametrize("value", [2, "2s", "00:60:00", "abc", None])
def test_bad_timespans_name_the_key(value: object) -> None:
    with pytest.raises(HostJsonError, match=r"extensions\.queues\.visibilityTimeout"):
        parse_host_config({"extensions": {"queues": {"visibilityTimeout": value}}})


@pytest.mark.parametrize(
    ("queues", "key"),
    [
        ({"batchSize": 0}, "batchSize"),
        ({"batchSize": 33}, "batchSize"),
        ({"batchSize": "4"}, "batchSize"),
        ({"batchSize": True}, "batchSize"),
        ({"maxDequeueCount": 0}, "maxDequeueCount"),
        ({"newBatchThreshold": -1}, "newBatchThreshold"),
        ({"maxPollingInterval": "00:00:00.050"}, "maxPollingInterval"),
        ({"messageEncoding": "utf8"}, "messageEncoding"),
    ],
)
def test_invalid_queue_values_are_rejected(queues: dict[str, object], key: str) -> None:
    with pytest.raises(HostJsonError, match=key):
        parse_host_config({"extensions": {"queues": queues}})


def test_wrong_shapes_are_rejected() -> None:
    with pytest.raises(HostJsonError, match="version"):
        parse_host_config({"version": "1.0"})
    with pytest.raises(HostJsonError, match=r"extensions\.queues"):
        parse_host_config({"extensions": {"queues": []}})
    with pytest.raises(HostJsonError, match="routePrefix"):
        parse_host_config({"extensions": {"http": {"routePrefix": 1}}})


def test_load_from_file(tmp_path: Path) -> None:
    path = tmp_path / "host.json"
    path.write_text(json.dumps({"version": "2.0", "extensions": {"queues": {"batchSize": 2}}}))
    assert load_host_config(path).queues.batch_size == 2
    assert load_host_config(None) == HostConfig()
    path.write_text("{not json")
    with pytest.raises(HostJsonError, match="invalid JSON"):
        load_host_config(path)
    with pytest.raises(HostJsonError, match="cannot read"):
        load_host_config(tmp_path / "missing.json")
