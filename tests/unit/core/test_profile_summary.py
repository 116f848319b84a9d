"""The bench's profile categories (what ``make bench`` prints as where a job's host time goes)."""

from __future__ import annotations

import cProfile
import json
import pstats
import time
from typing import Any

import pytest

from tests.bench.profile_summary import CATEGORIES, Profile, categorize, lines, summarize

SITE = "/venv/lib/python3.11/site-packages"


@pytest.mark.parametrize(
    ("filename", "function", "category"),
    [
        ("~", "<method 'recv_into' of '_socket.socket' objects>", "waiting"),
        ("~", "<built-in method time.sleep>", "waiting"),
        ("~", "<built-in method _posixsubprocess.fork_exec>", "processes"),
        ("~", "<method 'lower' of 'str' objects>", "other"),
        (f"{SITE}/azure/storage/blob/_deserialize.py", "deserialize_blob_properties", "Azure SDK"),
        (f"{SITE}/azure/core/pipeline/policies/_retry.py", "send", "Azure SDK"),
        (f"{SITE}/requests/sessions.py", "merge_environment_settings", "HTTP client"),
        ("/usr/lib/python3.11/urllib/request.py", "getproxies_environment", "HTTP client"),
        (f"{SITE}/pydantic/main.py", "model_dump_json", "JSON and models"),
        ("/usr/lib/python3.11/json/decoder.py", "decode", "JSON and models"),
        ("/usr/lib/python3.11/subprocess.py", "_execute_child", "processes"),
        ("/usr/lib/python3.11/threading.py", "wait", "waiting"),
        (f"{SITE}/opentelemetry/context/__init__.py", "get_value", "telemetry"),
        ("/repo/hastelib/src/hastegeo/pipeline/poll.py", "_handle", "pipeline code"),
        ("/usr/lib/python3.11/enum.py", "__call__", "other"),
    ],
)
def test_each_function_has_one_category(filename: str, function: str, category: str) -> None:
    assert categorize(filename, function) == category
    assert category in CATEGORIES


def test_the_categories_add_up_to_the_profiled_time() -> None:
    profiler = cProfile.Profile(time.perf_counter)
    profiler.enable()
    json.loads(json.dumps({"a": list(range(20_000))}))
    time.sleep(0.05)
    profiler.disable()
    stats = pstats.Stats(profiler)
    found = summarize(stats)
    assert found["waiting"] >= 0.05  # the sleep is waiting, measured in wall time
    assert found["JSON and models"] > 0
    assert sum(found.values()) == pytest.approx(stats.total_tt)  # type: ignore[attr-defined]


def test_a_profile_counts_only_what_it_wraps_and_prints_per_job() -> None:
    profile = Profile()
    sleepy = profile.wrap(time.sleep)
    sleepy(0.02)
    time.sleep(0.05)  # not wrapped: not counted
    assert 0.02 <= profile.wall_s < 0.05
    printed = lines(profile.categories(), profile.cpu_s, profile.wall_s, jobs=2)
    assert printed[0].split()[0] == "waiting"
    assert printed[-1].startswith("    (host CPU)")


class _Stats:
    """What :func:`summarize` reads of ``pstats.Stats``: per function (cc, nc, tottime, cumtime, callers)."""

    def __init__(self, stats: dict[tuple[str, int, str], tuple[Any, ...]]) -> None:
        self.stats = stats


def test_a_function_without_a_category_counts_toward_its_callers() -> None:
    sdk = (f"{SITE}/azure/core/pipeline/_base.py", 1, "send")
    http = (f"{SITE}/urllib3/connection.py", 1, "request")
    helper = ("/usr/lib/python3.11/enum.py", 1, "__call__")  # called by the built-in, calls it too
    builtin = ("~", 0, "<built-in method builtins.isinstance>")
    stats = _Stats(
        {
            sdk: (1, 1, 1.0, 2.0, {}),
            http: (1, 1, 0.5, 1.0, {}),
            helper: (2, 2, 0.2, 0.3, {sdk: (2, 2, 0.2, 0.3), builtin: (1, 1, 0.0, 0.1)}),
            builtin: (4, 4, 0.4, 0.4, {sdk: (3, 3, 0.3, 0.3), http: (1, 1, 0.1, 0.1), helper: (1, 1, 0.0, 0.0)}),
            ("~", 0, "<method 'disable' of '_lsprof.Profiler' objects>"): (1, 1, 0.1, 0.1, {}),
        }
    )
    found = summarize(stats)  # type: ignore[arg-type]
    # The built-in: 3/4 from the SDK, 1/4 from HTTP. The helper: 3/4 from the SDK, 1/4 through the built-in.
    assert found["Azure SDK"] == pytest.approx(1.0 + 0.4 * 0.75 + 0.2 * (0.75 + 0.25 * 0.75))
    assert found["HTTP client"] == pytest.approx(0.5 + 0.4 * 0.25 + 0.2 * 0.25 * 0.25)
    assert found["other"] == pytest.approx(0.1)  # called by nothing profiled
    assert sum(found.values()) == pytest.approx(2.2)  # every second of own time, once
