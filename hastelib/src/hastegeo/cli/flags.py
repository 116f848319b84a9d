"""Request parts from command-line values (``--input blob:x``, ``--param k=v``): ``submit``'s and ``group submit``'s."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hastegeo.cli.exits import usage


def parse_inputs(values: Sequence[str]) -> list[dict[str, str]]:
    inputs = []
    for value in values:
        kind, sep, ref = value.partition(":")
        if not sep or kind not in ("blob", "job"):
            raise usage(f"--input takes blob:<name> or job:<id>, not {value!r}")
        inputs.append({"blob": ref} if kind == "blob" else {"jobId": ref})
    return inputs


def parse_params(values: Sequence[str]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for value in values:
        key, sep, raw = value.partition("=")
        if not sep:
            raise usage(f"--param takes key=value (value may be JSON), not {value!r}")
        try:
            params[key] = json.loads(raw)
        except ValueError:
            params[key] = raw
    return params
