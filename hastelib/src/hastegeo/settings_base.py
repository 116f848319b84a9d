"""Building blocks for settings sections: comma-separated lists and maps from one variable.

Kept apart from :mod:`hastegeo.config` so each backend can define its own
section next to its adapter without an import cycle.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict


def _split_list(value: Any) -> Any:
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    return value


def _split_map(value: Any) -> Any:
    """``"a=1, b=2"`` → ``{"a": "1", "b": "2"}``; a dict passes through."""
    if isinstance(value, str):
        pairs = [item.strip() for item in value.split(",") if item.strip()]
        result: dict[str, str] = {}
        for pair in pairs:
            key, sep, val = pair.partition("=")
            if not sep or not key.strip():
                raise ValueError(f"expected key=value pairs separated by commas, got {pair!r}")
            result[key.strip()] = val.strip()
        return result
    return value


CsvList = Annotated[list[str], BeforeValidator(_split_list)]
CsvFloatMap = Annotated[dict[str, float], BeforeValidator(_split_map)]
CsvMap = Annotated[dict[str, str], BeforeValidator(_split_map)]


class Section(BaseModel):
    """A group of settings; each field's alias is its environment variable."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True, frozen=True)


_Section = Section
