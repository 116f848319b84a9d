"""``haste group``: items read from CSV and JSON files, the progress line, and the exit a followed group gives.

What these commands send and print against the real API is tested on the development stack
(tests/e2e/test_cli_groups.py); here, the parts that need no API.
"""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
from typing import Any

import pytest

from hastegeo.cli.exits import ExitCode, Failure
from hastegeo.cli.groups import ProgressBar, csv_items, group_exit, group_lines, group_request, progress_line
from hastegeo.cli.main import build_parser, main


def group(**counts: int) -> dict[str, Any]:
    names = ("queued", "running", "succeeded", "failed", "cancelled", "notMade")
    full = {name: counts.get(name, 0) for name in names}
    return {
        "id": "g1",
        "projectId": "p1",
        "workload": "artifacts",
        "state": "open",
        "itemCount": sum(full.values()),
        "counts": full,
        "failures": [],
        "links": {"jobs": "/api/jobs?groupId=g1"},
    }


def test_csv_rows_become_items_by_their_header() -> None:
    text = (
        "input,input2,after,label.tile,size,name,empty\n"
        "blob:p1/a.tif,job:j1,j0 g0,7,256,x,\n"
        'blob:p1/b.tif,,,8,"[1,2]",,\n'
    )
    assert csv_items(text, "t.csv") == [
        {
            "inputs": [{"blob": "p1/a.tif"}, {"jobId": "j1"}],
            "after": ["j0", "g0"],
            "labels": {"tile": "7"},
            "parameters": {"size": 256, "name": "x"},
        },
        {"inputs": [{"blob": "p1/b.tif"}], "labels": {"tile": "8"}, "parameters": {"size": [1, 2]}},
    ]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("input\nnot-a-source\n", "t.csv line 2, column input: --input takes blob:<name> or job:<id>"),
        ("a\n1,2\n", "t.csv line 2: more cells than the header has columns"),
        ("", "t.csv has no header row"),
    ],
)
def test_a_bad_csv_is_a_usage_error_naming_the_line(text: str, said: str) -> None:
    with pytest.raises(Failure) as caught:
        csv_items(text, "t.csv")
    assert caught.value.code is ExitCode.USAGE
    assert said in caught.value.message


def parsed(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["group", "submit", *argv])


def test_flags_go_over_the_shared_part_of_a_json_file(tmp_path: Path) -> None:
    path = tmp_path / "group.json"
    path.write_text(
        json.dumps(
            {
                "workload": "inference",
                "projectId": "p0",
                "parameters": {"a": 1, "b": 2},
                "labels": {"run": "1"},
                "items": [{"parameters": {"c": 3}}],
            }
        )
    )
    args = parsed("--file", str(path), "--project", "p1", "--param", "b=5", "--input", "job:j1", "--label", "x=y")
    assert group_request(args) == {
        "workload": "inference",
        "projectId": "p1",
        "parameters": {"a": 1, "b": 5},
        "inputs": [{"jobId": "j1"}],
        "labels": {"run": "1", "x": "y"},
        "items": [{"parameters": {"c": 3}}],
    }
    array = tmp_path / "items.json"
    array.write_text('[{"parameters": {"c": 3}}, {}]')
    request = group_request(parsed("--file", str(array), "--workload", "artifacts", "--project", "p1"))
    assert request["items"] == [{"parameters": {"c": 3}}, {}]


@pytest.mark.parametrize(
    ("content", "extra", "said"),
    [
        ("[]", ("--workload", "artifacts", "--project", "p1"), "holds no items"),
        ('{"items": 3}', ("--workload", "artifacts", "--project", "p1"), "needs a JSON array of items"),
        ("[1, 2]", ("--workload", "artifacts", "--project", "p1"), "needs a JSON array of items"),
        ("{not json", ("--workload", "artifacts", "--project", "p1"), "neither CSV (.csv) nor JSON"),
        ("[{}]", ("--project", "p1"), "needs a workload and a project"),
        ("[{}]", ("--workload", "artifacts", "--project", "p1", "--label", "nokey"), "--label takes key=value"),
    ],
)
def test_a_bad_items_file_or_flag_exits_2_and_sends_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, extra: tuple[str, ...], said: str
) -> None:
    path = tmp_path / "items.json"
    path.write_text(content)
    # Nothing listens at this URL: reaching the API would exit 7, not 2.
    assert main(["--url", "http://127.0.0.1:9", "group", "submit", "--file", str(path), *extra]) == ExitCode.USAGE
    assert said in capsys.readouterr().err


def test_the_progress_line_draws_ended_items_and_names_the_counts() -> None:
    assert progress_line(group(succeeded=5, failed=1, running=2, queued=2), width=10) == (
        "[=====x....] 6/10 ended  5 succeeded  1 failed  2 running  2 queued"
    )
    assert progress_line(group(notMade=4), width=4) == "[....] 0/4 ended  0 succeeded  4 not made yet"
    assert progress_line(group(succeeded=3), width=3) == "[===] 3/3 ended  3 succeeded"


def test_a_followed_group_exits_0_only_when_every_item_succeeded() -> None:
    assert group_exit(group(succeeded=3)) is ExitCode.OK
    assert group_exit(group(succeeded=2, failed=1, cancelled=1)) is ExitCode.JOB_FAILED
    assert group_exit(group(succeeded=2, cancelled=1)) is ExitCode.JOB_CANCELLED


def test_the_table_names_the_first_failures_with_their_causes() -> None:
    shown = group(succeeded=1, failed=7)
    shown["failures"] = [
        {"index": i, "jobId": f"g1-{i}", "state": "failed", "reason": f"cause {i}"} for i in range(1, 8)
    ]
    lines = group_lines(shown)
    assert "item 1 (g1-1) failed: cause 1" in lines[2]
    assert sum("failed: cause" in line for line in lines) == 5
    assert "… and 2 more failures" in lines[-2]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_bar_redraws_in_place_on_a_terminal_and_adds_lines_elsewhere() -> None:
    terminal, piped = Terminal(), io.StringIO()
    for stream in (terminal, piped):
        bar = ProgressBar(stream)
        bar(group(queued=2))
        bar(group(succeeded=2))
        bar.close()
    assert terminal.getvalue().count("\r\x1b[K") == 2
    assert terminal.getvalue().endswith("2 succeeded\n")
    assert piped.getvalue().splitlines() == [progress_line(group(queued=2)), progress_line(group(succeeded=2))]
