"""``haste logs JOB --stdout|--stderr``: reads from the offset each answer gives; prints each part once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest

from hastegeo.cli.main import main
from tests.support.stub_api import JsonHandler, serving

ASKED: list[tuple[str, str, int]] = []
# The log by offset: what a read from there answers (text, next offset, ended, state).
LOG = {
    0: ("one\ntwo\n", 8, False, "running"),
    8: ("", 8, False, "running"),  # nothing new once; asked again from the same offset
}
END = {8: ("last", 12, True, "failed")}


class Handler(JsonHandler):
    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = {key: values[0] for key, values in parse_qs(url.query).items()}
        offset = int(query["offset"])
        ASKED.append((url.path, query["stream"], offset))
        seen = sum(1 for _, _, asked in ASKED if asked == offset)
        text, next_offset, ended, state = (END if seen > 1 and offset in END else LOG)[offset]
        part = {"jobId": "j1", "stream": query["stream"], "offset": offset, "nextOffset": next_offset,
                "text": text, "ended": ended, "source": "backend", "state": state}  # fmt: skip
        self.answer(part)


@pytest.fixture
def server() -> Iterator[str]:
    ASKED.clear()
    with serving(Handler) as url:
        yield url


def test_without_follow_it_prints_what_there_is_and_stops(server: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["logs", "j1", "--stdout", "--url", server, "--output", "table"]) == 0
    assert capsys.readouterr().out == "one\ntwo\n"
    assert ASKED == [("/api/jobs/j1/logs", "stdout", 0), ("/api/jobs/j1/logs", "stdout", 8)]


def test_follow_reads_until_ended_and_exits_as_watch(server: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["logs", "j1", "--stderr", "--follow", "--interval", "0.01", "--url", server, "--output", "table"])
    assert code == 1  # the job failed
    assert capsys.readouterr().out == "one\ntwo\nlast"
    assert [offset for _, _, offset in ASKED] == [0, 8, 8]
    assert {stream for _, stream, _ in ASKED} == {"stderr"}


def test_json_prints_each_part_as_a_line(server: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["logs", "j1", "--stdout", "--follow", "--interval", "0.01", "--url", server, "--output", "json"]) == 1
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(part["text"], part["nextOffset"]) for part in lines] == [("one\ntwo\n", 8), ("last", 12)]


def test_stdout_and_stderr_exclude_each_other(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["logs", "j1", "--stdout", "--stderr"])
    assert exited.value.code == 2
