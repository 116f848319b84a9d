"""Atomic file writes: a reader sees the old content or the new, never half, and nothing is left behind."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from hastegeo.utils.files import read_json, replacing, write_bytes, write_json


def test_a_failed_write_keeps_the_old_content_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "result.bin"
    write_bytes(target, b"old")

    def die_midway() -> None:
        with replacing(target) as temporary:
            temporary.write_bytes(b"half")
            assert target.read_bytes() == b"old"  # not renamed yet: readers still see the old file
            raise RuntimeError("the writer died midway")

    with pytest.raises(RuntimeError, match="midway"):
        die_midway()
    assert target.read_bytes() == b"old"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["result.bin"]


def test_concurrent_writers_each_replace_the_whole_document(tmp_path: Path) -> None:
    target = tmp_path / "state" / "exit.json"  # the folder is created on first write
    documents = [{"writer": index, "payload": "x" * 10_000} for index in range(8)]
    writers = [threading.Thread(target=write_json, args=(target, document)) for document in documents]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    assert read_json(target) in documents
    assert [path.name for path in target.parent.iterdir()] == ["exit.json"]


@pytest.mark.parametrize("content", ["", "{not json", "[1, 2]"])
def test_read_json_is_none_for_what_is_not_an_object(tmp_path: Path, content: str) -> None:
    path = tmp_path / "spec.json"
    path.write_text(content, encoding="utf-8")
    assert read_json(path) is None
    assert read_json(tmp_path / "missing.json") is None
