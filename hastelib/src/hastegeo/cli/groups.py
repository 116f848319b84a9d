"""``haste group submit / get / cancel / retry``: many jobs as one request (job groups, docs/adr/0040).

``submit`` reads the items from a file: JSON (an array of items, or a whole group request whose
``items`` they are) or CSV (one item per row; see :func:`csv_items`). What the items share comes
from the file and from flags (``--workload``, ``--project``, ``--param``, ``--input``, ``--after``,
``--label``); flags win. ``--watch`` follows the group with a progress bar until every item has
ended and exits as :func:`group_exit` says. Tables for people, the API's JSON elsewhere
(``--output json``), like every command (``hastegeo.cli.output``).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from hastegeo.cli.client import ApiClient
from hastegeo.cli.exits import ExitCode, Failure, usage
from hastegeo.cli.flags import parse_inputs, parse_params
from hastegeo.cli.output import JSON, TABLE, job_row, print_json

ClientOf = Callable[[argparse.Namespace], ApiClient]
BAR_WIDTH = 30
FAILURES_SHOWN = 5


# -- reading the items --------------------------------------------------------------------


def _cell(value: str) -> Any:
    """A CSV cell as a parameter: JSON when it reads as JSON (numbers, true, lists), else the text."""
    try:
        return json.loads(value)
    except ValueError:
        return value


def csv_items(text: str, name: str) -> list[dict[str, Any]]:
    """One item per row of ``text``, by its header: ``input…`` columns (``blob:<name>`` or ``job:<id>``)
    add an input each, ``after`` lists job or group ids (space-separated), ``label.KEY`` sets a label,
    and every other column is a parameter (JSON when the cell reads as JSON). Empty cells are left out.

    Raises Failure (usage) naming the line and the column.
    """
    reader = csv.DictReader(io.StringIO(text))
    if not reader.fieldnames:
        raise usage(f"the items file {name} has no header row")
    items = []
    for row in reader:
        line = reader.line_num
        if None in row:
            raise usage(f"{name} line {line}: more cells than the header has columns")
        item: dict[str, Any] = {}
        for column, value in row.items():
            column, value = (column or "").strip(), (value or "").strip()
            if not value:
                continue
            if column.startswith("input"):
                try:
                    item.setdefault("inputs", []).extend(parse_inputs([value]))
                except Failure as exc:
                    raise usage(f"{name} line {line}, column {column}: {exc}") from None
            elif column == "after":
                item["after"] = value.split()
            elif column.startswith("label."):
                item.setdefault("labels", {})[column.removeprefix("label.")] = value
            else:
                item.setdefault("parameters", {})[column] = _cell(value)
        items.append(item)
    return items


def read_items_file(name: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The shared part and the items in file ``name`` (``-``: standard input, JSON).

    A ``.csv`` file holds items only; JSON holds an array of items or a group request with ``items``.
    Raises Failure (usage) naming what is wrong.
    """
    try:
        text = sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise usage(f"cannot read the items file {name}: {getattr(exc, 'strerror', None) or exc}") from exc
    items: Any
    shared: dict[str, Any] = {}
    if name.lower().endswith(".csv"):
        items = csv_items(text, name)
    else:
        try:
            found = json.loads(text)
        except ValueError as exc:
            raise usage(f"the items file {name} is neither CSV (.csv) nor JSON: {exc}") from exc
        if isinstance(found, dict):
            shared = {key: value for key, value in found.items() if key != "items"}
            items = found.get("items")
        else:
            items = found
        if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
            raise usage(f"the items file {name} needs a JSON array of items (objects), or an object with 'items'")
    if not items:
        raise usage(f"the items file {name} holds no items")
    return shared, items


def group_request(args: argparse.Namespace) -> dict[str, Any]:
    """The group request: the file's shared part and items, with the flags over the shared part."""
    shared, items = read_items_file(args.file)
    request = {**shared}
    for key, flag in (("workload", args.workload), ("projectId", args.project), ("backend", args.backend)):
        if flag:
            request[key] = flag
    if args.param:
        request["parameters"] = {**request.get("parameters", {}), **parse_params(args.param)}
    if args.input:
        request["inputs"] = [*request.get("inputs", []), *parse_inputs(args.input)]
    if args.after:
        request["after"] = [*request.get("after", []), *args.after]
    if args.label:
        labels = dict(request.get("labels", {}))
        for value in args.label:
            key, sep, text = value.partition("=")
            if not sep or not key:
                raise usage(f"--label takes key=value, not {value!r}")
            labels[key] = text
        request["labels"] = labels
    if not (request.get("workload") and request.get("projectId")):
        raise usage("group submit needs a workload and a project (--workload, --project, or in the JSON file)")
    request["items"] = items
    return request


# -- printing -----------------------------------------------------------------------------


def progress_line(group: dict[str, Any], width: int = BAR_WIDTH) -> str:
    """One line: a bar (``=`` succeeded, ``x`` failed or cancelled, ``.`` the rest) and the counts."""
    counts, total = group.get("counts", {}), max(int(group.get("itemCount", 0)), 1)
    good = counts.get("succeeded", 0)
    bad = counts.get("failed", 0) + counts.get("cancelled", 0)
    done_cells = round(width * (good + bad) / total)
    bad_cells = min(done_cells, round(width * bad / total)) if bad else 0
    bar = "=" * (done_cells - bad_cells) + "x" * bad_cells + "." * (width - done_cells)
    parts = [f"[{bar}] {good + bad}/{total} ended", f"{good} succeeded"]
    parts += [f"{counts[name]} {name}" for name in ("failed", "cancelled", "running", "queued") if counts.get(name)]
    if counts.get("notMade"):
        parts.append(f"{counts['notMade']} not made yet")
    return "  ".join(parts)


def group_lines(group: dict[str, Any]) -> list[str]:
    """The table a terminal shows for a group."""
    lines = [
        f"group {group['id']}  {group.get('workload', '')}  project {group['projectId']}  state: {group['state']}",
        "  " + progress_line(group),
    ]
    if group.get("retried") is not None:
        lines.append(f"  retried: {group['retried']} item(s) made again")
    for failure in group.get("failures", [])[:FAILURES_SHOWN]:
        cause = failure.get("reason") or "-"
        lines.append(f"  item {failure['index']} ({failure['jobId']}) {failure['state']}: {cause}")
    hidden = len(group.get("failures", [])) - FAILURES_SHOWN
    if hidden > 0:
        lines.append(f"  … and {hidden} more failures (haste group items shows every item)")
    lines.append(f"  items: GET {group.get('links', {}).get('jobs', '')}")
    return lines


def group_exit(group: dict[str, Any]) -> ExitCode:
    """0 when every item succeeded; 1 when any failed; 3 when none failed and some were cancelled."""
    counts = group.get("counts", {})
    if counts.get("failed"):
        return ExitCode.JOB_FAILED
    if counts.get("cancelled"):
        return ExitCode.JOB_CANCELLED
    return ExitCode.OK


class ProgressBar:
    """Draws :func:`progress_line` in place on a terminal; elsewhere a new line only when the counts change."""

    def __init__(self, stream: TextIO | None) -> None:
        self._stream = stream
        self._tty = bool(stream is not None and stream.isatty())
        self._drawn = False

    def __call__(self, group: dict[str, Any]) -> None:
        if self._stream is None:
            return
        line = progress_line(group)
        self._stream.write(("\r\x1b[K" if self._tty else "") + line + ("" if self._tty else "\n"))
        self._stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self._stream is not None and self._tty and self._drawn:
            self._stream.write("\n")
            self._stream.flush()


def _progress_stream(args: argparse.Namespace) -> TextIO | None:
    """Tables: the bar goes with them. JSON: only to a terminal's standard error, so stdout stays the API's body."""
    if args.output == TABLE:
        return sys.stdout
    return sys.stderr if sys.stderr.isatty() else None


def _show(args: argparse.Namespace, group: dict[str, Any]) -> None:
    if args.output == JSON:
        print_json(group)
    else:
        print("\n".join(group_lines(group)))


def follow(args: argparse.Namespace, client: ApiClient, group_id: str) -> int:
    """Follow ``group_id`` with a progress bar until it completes; show it and exit as :func:`group_exit`."""
    bar = ProgressBar(_progress_stream(args))
    try:
        group = client.watch_group(group_id, bar, interval=args.interval, timeout=args.timeout)
    finally:
        bar.close()
    _show(args, group)
    return int(group_exit(group))


# -- the commands -------------------------------------------------------------------------


def cmd_submit(args: argparse.Namespace, client: ApiClient) -> int:
    request = group_request(args)
    # Always a key: a submission retried after a 429/503 (or by the user) returns the same group.
    group = client.submit_group(request, idempotency_key=args.idempotency_key or f"cli-{uuid.uuid4()}")
    if not args.watch:
        print_json(group) if args.output == JSON else print(group["id"])
        return 0
    if args.output == TABLE:
        print(f"{group['id']}: {group['itemCount']} items")
    return follow(args, client, group["id"])


def cmd_get(args: argparse.Namespace, client: ApiClient) -> int:
    _show(args, client.get_group(args.group_id))
    return 0


def cmd_watch(args: argparse.Namespace, client: ApiClient) -> int:
    return follow(args, client, args.group_id)


def cmd_items(args: argparse.Namespace, client: ApiClient) -> int:
    for count, job in enumerate(client.group_jobs(args.group_id), start=1):
        print_json(job, line=True) if args.output == JSON else print(job_row(job))
        if count >= args.limit:
            break
    return 0


def cmd_cancel(args: argparse.Namespace, client: ApiClient) -> int:
    group = client.cancel_group(args.group_id)
    print_json(group) if args.output == JSON else print(f"{group['id']}: {group['state']}")
    return 0


def cmd_retry(args: argparse.Namespace, client: ApiClient) -> int:
    group = client.retry_group(args.group_id)
    if not args.watch:
        print_json(group) if args.output == JSON else print(f"{group['id']}: {group['retried']} item(s) made again")
        return 0
    if args.output == TABLE:
        print(f"{group['id']}: {group['retried']} item(s) made again")
    return follow(args, client, group["id"])


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], client_of: ClientOf) -> None:
    """Add ``group`` and its commands to the ``haste`` parser; ``client_of`` builds the API client."""
    from hastegeo.compute.catalog import backend_names
    from hastegeo.workloads.registry import workload_names

    group = commands.add_parser(
        "group",
        help="many jobs as one request: submit, get, cancel, retry a job group",
        description="Job groups: one request for up to 10,000 jobs that share a workload and a project.",
    )
    sub = group.add_subparsers(dest="group_command", required=True, metavar="COMMAND")

    def command(name: str, handler: Callable[[argparse.Namespace, ApiClient], int], help: str) -> Any:
        parser = sub.add_parser(name, help=help, description=help)
        parser.set_defaults(handler=lambda args: handler(args, client_of(args)))
        return parser

    def following(parser: argparse.ArgumentParser, flag: bool = True) -> None:
        if flag:
            parser.add_argument("--watch", action="store_true", help="follow with a progress bar until all ended")
        parser.add_argument("--timeout", type=float, default=3600, help="give up after this many seconds (exit 4)")
        parser.add_argument("--interval", type=float, default=1.0, help="seconds between two reads of the group")

    submit = command("submit", cmd_submit, "submit a group: the items from a JSON or CSV file")
    submit.add_argument("--file", required=True, help="items: .csv (one per row) or JSON (- reads standard input)")
    submit.add_argument("--workload", choices=workload_names())
    submit.add_argument("--project")
    submit.add_argument("--backend", choices=["auto", *backend_names()])
    submit.add_argument("--input", action="append", default=[], help="blob:<name> or job:<id> every item gets")
    submit.add_argument("--param", action="append", default=[], help="key=value every item gets (value may be JSON)")
    submit.add_argument("--label", action="append", default=[], help="key=value label of every item (repeatable)")
    submit.add_argument("--after", action="append", default=[], help="a job or group id every item waits for")
    submit.add_argument("--idempotency-key", help="retrying with the same key returns the same group")
    following(submit)

    get = command("get", cmd_get, "show a group: counts by state, progress and the first failures")
    get.add_argument("group_id")

    watch = command("watch", cmd_watch, "follow a group with a progress bar; exit 0 only if every item succeeded")
    watch.add_argument("group_id")
    following(watch, flag=False)

    items = command("items", cmd_items, "list a group's item jobs made so far, in item order")
    items.add_argument("group_id")
    items.add_argument("--limit", type=int, default=10_000)

    cancel = command("cancel", cmd_cancel, "cancel a group's queued and running items (and those not made yet)")
    cancel.add_argument("group_id")

    retry = command("retry", cmd_retry, "make a completed group's failed and cancelled items again")
    retry.add_argument("group_id")
    following(retry)
