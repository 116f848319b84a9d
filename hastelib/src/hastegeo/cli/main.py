"""haste: submit, follow, cancel and retry jobs, read their history and fetch their outputs.

Client commands talk to the HTTP API (``--url``, default ``$HASTE_API_URL`` or the
development host's address), so they work the same against a deployed Function App.
Every command prints a table on a terminal and the API's JSON elsewhere (``--output``;
``hastegeo.cli.output`` says how lists are printed); exit codes are listed in
``hastegeo.cli.exits``. Commands of installed distributions join through the
``hastegeo.cli`` entry point group (hastegeo-dev adds ``dev`` and ``demo``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import traceback
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from hastegeo.cli.client import ApiClient, CredentialToken
from hastegeo.cli.credential import sign_in_credential
from hastegeo.cli.exits import JOB_EXITS, ExitCode, Failure, explain, usage
from hastegeo.cli.flags import parse_inputs, parse_params
from hastegeo.cli.output import (
    JSON,
    TABLE,
    backend_rows,
    default_output,
    event_line,
    job_row,
    output_row,
    print_event,
    print_job,
    print_json,
)

if TYPE_CHECKING:
    pass

DEFAULT_URL = "http://127.0.0.1:7071"
ENTRY_POINTS = "hastegeo.cli"
# Adds commands to ``haste``: what a ``hastegeo.cli`` entry point names (e.g. hastegeo_dev.cli.register).
Plugin = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]


def _client(args: argparse.Namespace) -> ApiClient:
    """Credentials come from the environment, never from arguments (which end up in shell history):
    HASTE_FUNCTION_KEY for the platform's key check (only where HASTE_HTTP_AUTH_LEVEL=function), and
    for App Service authentication either HASTE_API_TOKEN (a token you fetched) or, with ``--scope``
    / HASTE_API_SCOPE (``api://<client id>/.default``), tokens from azure-identity, renewed as they
    expire."""
    token = os.environ.get("HASTE_API_TOKEN") or None
    scope = getattr(args, "scope", None)
    provider = CredentialToken(sign_in_credential(), scope) if scope and not token else None
    return ApiClient(
        args.url,
        function_key=os.environ.get("HASTE_FUNCTION_KEY") or None,
        bearer_token=token,
        token_provider=provider,
        timeout=args.request_timeout,
        retry_budget_s=args.retry_budget,
    )


def read_request_file(name: str) -> dict[str, Any]:
    """The JSON object in file ``name`` (``-``: standard input); a usage failure naming what is wrong."""
    try:
        text = sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise usage(f"cannot read the request file {name}: {getattr(exc, 'strerror', None) or exc}") from exc
    try:
        request = json.loads(text)
    except ValueError as exc:
        raise usage(f"the request file {name} is not JSON: {exc}") from exc
    if not isinstance(request, dict):
        raise usage(f"the request file {name} holds JSON {type(request).__name__}, not an object (a job request)")
    return request


def _follow(args: argparse.Namespace, client: ApiClient, job_id: str, *, events: bool, timeout: float | None) -> int:
    """Follow a job until it ends; print its events (``events``) and exit as ``watch`` does."""
    json_lines = args.output == JSON
    on_event = (lambda event: print_json(event, line=True)) if json_lines else print_event
    job = client.watch(job_id, on_event if events else (lambda event: None), interval=args.interval, timeout=timeout)
    return JOB_EXITS.get(job["state"], ExitCode.JOB_FAILED)


def cmd_submit(args: argparse.Namespace) -> int:
    if args.file:
        request = read_request_file(args.file)
    else:
        if not (args.workload and args.project):
            raise usage("submit needs --workload and --project (or --file)")
        request = {
            "workload": args.workload,
            "projectId": args.project,
            "inputs": parse_inputs(args.input),
            "parameters": parse_params(args.param),
        }
        if args.backend:
            request["backend"] = args.backend
    if args.profile:  # also over a request file's: the command line is the later word
        request["profile"] = args.profile
    client = _client(args)
    # Always a key: a submission retried after a 429/503 (or by the user) returns the same job.
    job = client.submit(request, idempotency_key=args.idempotency_key or f"cli-{uuid.uuid4()}")
    if not args.watch:
        print_json(job) if args.output == JSON else print(job["id"])
        return 0
    if args.output == TABLE:
        print(job["id"])
    return _watch(args, client, job["id"])


def _watch(args: argparse.Namespace, client: ApiClient, job_id: str) -> int:
    table = args.output == TABLE
    on_event = print_event if table else (lambda event: None)
    job = client.watch(job_id, on_event, interval=args.interval, timeout=args.timeout)
    print_job(job) if table else print_json(job)
    return JOB_EXITS.get(job["state"], ExitCode.JOB_FAILED)


def cmd_watch(args: argparse.Namespace) -> int:
    return _watch(args, _client(args), args.job_id)


def cmd_get(args: argparse.Namespace) -> int:
    job = _client(args).get(args.job_id)
    if args.output == JSON:
        print_json(job)
    else:
        print_job(job)
        for event in job.get("history", []):
            print_event(event)
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    for count, job in enumerate(_client(args).list(args.project, state=args.state), start=1):
        print_json(job, line=True) if args.output == JSON else print(job_row(job))
        if count >= args.limit:
            break
    return 0


def cmd_logs(args: argparse.Namespace) -> int:
    """The status history; with ``--follow``, new events as they come until the job ends (exit as ``watch``).

    With ``--stdout`` or ``--stderr``, that stream of the workload instead (``hastegeo.cli.logs``)."""
    client = _client(args)
    if args.stream:
        from hastegeo.cli.logs import read_logs

        json_lines = args.output == JSON

        def on_part(part: dict[str, Any]) -> None:
            print_json(part, line=True) if json_lines else print(part["text"], end="", flush=True)

        last = read_logs(client, args.job_id, args.stream, on_part, follow=args.follow, interval=args.interval)
        return JOB_EXITS.get(last["state"], ExitCode.JOB_FAILED) if args.follow else 0
    if args.follow:
        return _follow(args, client, args.job_id, events=True, timeout=None)
    job = client.get(args.job_id)
    if job.get("historyFolded") and args.output == TABLE:
        print(f"  ({job['historyFolded']} earlier events folded into the first ones kept)")
    for event in job.get("history", []):
        print_json(event, line=True) if args.output == JSON else print(event_line(event))
    return 0


def cmd_cancel(args: argparse.Namespace) -> int:
    job = _client(args).cancel(args.job_id)
    print_json(job) if args.output == JSON else print(f"{job['id']}: {job['state']}")
    return 0


def cmd_retry(args: argparse.Namespace) -> int:
    # One key for every attempt the client makes, so a retried request can only return the same new job.
    job = _client(args).retry(args.job_id, idempotency_key=args.idempotency_key or f"cli-{uuid.uuid4()}")
    print_json(job) if args.output == JSON else print(f"{job['id']}: {job['state']} (retry of {job['retryOf']})")
    return 0


def cmd_outputs(args: argparse.Namespace) -> int:
    from hastegeo.cli.download import download_outputs

    job = _client(args).get(args.job_id, read_urls=bool(args.download))
    outputs = job.get("outputs", [])
    if not outputs and job.get("state") != "succeeded":
        print(f"job {job['id']} is {job['state']}: outputs are recorded when it succeeds", file=sys.stderr)
    if not args.download:
        for output in outputs:
            print_json(output, line=True) if args.output == JSON else print(output_row(output))
        return 0
    for fetched in download_outputs(outputs, Path(args.download)):
        if args.output == JSON:
            print_json(fetched.report(), line=True)
        else:
            print(f"{fetched.action:<10} {fetched.path}  ({fetched.size} bytes, verified)", flush=True)
    return 0


def cmd_backends(args: argparse.Namespace) -> int:
    body = _client(args).backends()
    print_json(body) if args.output == JSON else print("\n".join(backend_rows(body)))
    return 0


def _trace_file() -> Path:
    """HASTE_OTEL_EXPORT's file, else ``.haste/otel.jsonl`` here or in the nearest parent that has one."""
    from hastegeo.settings.app import parse_export, telemetry_settings

    mode, configured = parse_export(telemetry_settings().export)
    if mode == "file" and configured:
        return Path(configured)
    here = Path.cwd().resolve()
    found = (folder / ".haste" / "otel.jsonl" for folder in (here, *here.parents))
    return next((path for path in found if path.is_file()), here / ".haste" / "otel.jsonl")


def cmd_trace(args: argparse.Namespace) -> int:
    """Print the trace of a job from the JSON lines the development host wrote (HASTE_OTEL_EXPORT=file:PATH)."""
    from hastegeo.telemetry.export import job_logs, read_trace, render_trace

    path = Path(args.file) if args.file else _trace_file()
    if not path.is_file():
        raise Failure(ExitCode.NOT_FOUND, f"no telemetry file at {path} (make dev writes .haste/otel.jsonl)")
    spans = read_trace(path, args.job_id)
    if not spans:
        raise Failure(ExitCode.NOT_FOUND, f"no span of job {args.job_id} in {path}")
    logs = job_logs(path, args.job_id)
    if args.output == JSON:
        for entry in (*spans, *logs):
            print_json(entry, line=True)
        return 0
    render_trace(spans, print)
    for entry in logs:
        print(f"{entry['time']} {entry['level']} {entry['message']}")
    return 0


def cmd_sample_data(args: argparse.Namespace) -> int:
    from hastegeo.cli.sample_data import upload_sample_scene
    from hastegeo.settings.load import load_settings

    settings = load_settings()
    if not settings.storage.connection_string:
        raise usage("sample-data needs AzureWebJobsStorage (a connection string), e.g. from `haste dev`")
    container = settings.storage.inputs_container
    with tempfile.TemporaryDirectory(prefix="haste-scene-") as folder:
        names = upload_sample_scene(settings.storage.connection_string, Path(folder), args.prefix, args.size, container)
    for name in names:
        print_json({"container": container, "blob": name}, line=True) if args.output == JSON else print(
            f"{container}/{name}"
        )
    return 0


def cmd_completion(args: argparse.Namespace) -> int:
    from hastegeo.cli.completion import script

    print(script(args.parser, args.shell), end="")
    return 0


def _add_common(common: argparse.ArgumentParser, defaults: bool) -> None:
    """Options every command takes, before or after its name. Only the top level holds defaults, so a
    subcommand's copy (``argparse.SUPPRESS``) never overwrites a value given before the command's name."""

    def default(value: Any) -> Any:
        return value if defaults else argparse.SUPPRESS

    common.add_argument("--url", default=default(os.environ.get("HASTE_API_URL", DEFAULT_URL)), help="API base URL")
    common.add_argument(
        "--scope",
        default=default(os.environ.get("HASTE_API_SCOPE") or None),
        help="sign in with azure-identity (az login, else a device code) for this scope, e.g. "
        "api://<client id>/.default (default $HASTE_API_SCOPE; $HASTE_API_TOKEN wins when set)",
    )
    common.add_argument(
        "-o",
        "--output",
        choices=(TABLE, JSON),
        default=default(os.environ.get("HASTE_OUTPUT") or None),
        help="table (default on a terminal) or json: the API's body, lists as JSON lines ($HASTE_OUTPUT)",
    )
    common.add_argument("--debug", action="store_true", default=default(False), help="show tracebacks")
    common.add_argument(
        "--request-timeout", type=float, default=default(30.0), help="seconds to wait for each answer (default 30)"
    )
    common.add_argument(
        "--retry-budget",
        type=float,
        default=default(60.0),
        help="seconds in all to wait on the API's Retry-After (429, 503) before giving up (default 60)",
    )


class CommandParser(argparse.ArgumentParser):
    """The parser of every command, nested ones and those added by ``aml`` or an entry point included:
    it takes the common options after the command's name as well."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _add_common(self, defaults=False)


def _entry_point_plugins() -> list[Plugin]:
    """The commands installed distributions add; one that fails to load is named, and the rest still work."""
    from importlib.metadata import entry_points

    plugins = []
    for entry in entry_points(group=ENTRY_POINTS):
        try:
            plugins.append(entry.load())
        except Exception as exc:  # a broken add-on must not take the client commands with it
            print(f"warning: the commands of {entry.value} were not loaded: {exc!r}", file=sys.stderr)
    return plugins


def stdout_gone() -> bool:
    """Whether standard output is a pipe whose reader has left (``haste list | head -1``)."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLERR)
        return any(event & select.POLLERR for _, event in poller.poll(0))
    except (OSError, ValueError):
        return False


def build_parser(plugins: Iterable[Plugin] | None = None) -> argparse.ArgumentParser:
    # Choices come from the workload and backend descriptors (built in or installed), never a copy.
    from hastegeo import __version__
    from hastegeo.compute.catalog import backend_names
    from hastegeo.workloads.registry import workload_names

    parser = argparse.ArgumentParser(prog="haste", description=__doc__.splitlines()[0] if __doc__ else None)
    _add_common(parser, defaults=True)
    parser.add_argument("--version", action="version", version=f"haste {__version__}")
    commands = cast(
        "argparse._SubParsersAction[argparse.ArgumentParser]",
        parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=CommandParser),
    )

    def command(name: str, handler: Callable[[argparse.Namespace], int], help: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help, description=help)
        sub.set_defaults(handler=handler)
        return sub

    def following(sub: argparse.ArgumentParser, timeout: bool = True) -> None:
        if timeout:
            sub.add_argument("--timeout", type=float, default=3600, help="give up after this many seconds (exit 4)")
        sub.add_argument("--interval", type=float, default=0.25, help="seconds between two reads of the job")

    submit = command("submit", cmd_submit, "submit a job")
    submit.add_argument("--file", help="a JSON job request (- reads standard input)")
    submit.add_argument("--workload", choices=workload_names())
    submit.add_argument("--project")
    submit.add_argument("--backend", choices=["auto", *backend_names()])
    submit.add_argument("--profile", help="the compute profile to run on (haste backends lists them)")
    submit.add_argument("--input", action="append", default=[], help="blob:<name> or job:<id> (repeatable)")
    submit.add_argument("--param", action="append", default=[], help="key=value, value may be JSON (repeatable)")
    submit.add_argument("--idempotency-key", help="retrying with the same key returns the same job")
    submit.add_argument("--watch", action="store_true", help="follow the job until it ends (exit as watch)")
    following(submit)

    get = command("get", cmd_get, "show a job and its status history")
    get.add_argument("job_id")
    get.add_argument(
        "--json", action="store_const", const=JSON, dest="output", default=argparse.SUPPRESS, help=argparse.SUPPRESS
    )

    listing = command("list", cmd_list, "list a project's jobs, newest first")
    listing.add_argument("--project", required=True)
    listing.add_argument("--state", help="only jobs in these states (comma-separated)")
    listing.add_argument("--limit", type=int, default=50)

    watch = command("watch", cmd_watch, "follow a job until it ends; exit 0 only if it succeeded")
    watch.add_argument("job_id")
    following(watch)

    logs = command(
        "logs", cmd_logs, "print a job's status history, or its --stdout or --stderr; --follow until it ends"
    )
    logs.add_argument("job_id")
    stream = logs.add_mutually_exclusive_group()
    stream.add_argument("--stdout", action="store_const", const="stdout", dest="stream", help="the workload's stdout")
    stream.add_argument("--stderr", action="store_const", const="stderr", dest="stream", help="the workload's stderr")
    logs.add_argument("-f", "--follow", action="store_true", help="follow until the job ends (exit as watch)")
    following(logs, timeout=False)

    cancel = command("cancel", cmd_cancel, "cancel a job")
    cancel.add_argument("job_id")

    retry = command("retry", cmd_retry, "run a failed or cancelled job again: a new job, the same request")
    retry.add_argument("job_id")
    retry.add_argument("--idempotency-key", help="the same key returns the retry it already made")

    outputs = command("outputs", cmd_outputs, "list a job's outputs; --download fetches and verifies them")
    outputs.add_argument("job_id")
    outputs.add_argument("--download", metavar="DIR", help="download into DIR, resumably, checked against the manifest")

    command("backends", cmd_backends, "the enabled backends, what each runs, and why not the rest")

    trace = command("trace", cmd_trace, "print a job's trace from the development host's telemetry file")
    trace.add_argument("job_id")
    trace.add_argument("--file", help="JSON lines file (default: HASTE_OTEL_EXPORT's file, else .haste/otel.jsonl)")

    sample = command("sample-data", cmd_sample_data, "generate a synthetic scene and upload it to the inputs container")
    sample.add_argument("--prefix", default="sample/scene", help="blob prefix in the inputs container")
    sample.add_argument("--size", type=int, default=512, help="scene width and height in pixels (multiple of 128)")

    completion = command("completion", cmd_completion, "print a completion script: source <(haste completion bash)")
    completion.add_argument("shell", choices=("bash", "zsh"))
    completion.set_defaults(parser=parser)

    try:
        from hastegeo.cli import aml
    except ImportError:
        pass
    else:
        aml.register(commands)
    from hastegeo.cli.costs import register as register_costs
    from hastegeo.cli.groups import register as register_groups
    from hastegeo.cli.prices import register as register_prices
    from hastegeo.doctor.cli import register as register_doctor

    register_prices(commands)
    register_costs(commands, _client)
    register_groups(commands, _client)
    register_doctor(commands)
    registered: list[Plugin] = []
    for plugin in [*_entry_point_plugins(), *(plugins or ())]:
        if plugin not in registered:  # python -m hastegeo_dev names the plugin its entry point also names
            plugin(commands)
            registered.append(plugin)
    return parser


def report(failure: Failure) -> None:
    print(f"error: {failure.message}", file=sys.stderr)
    for line in failure.lines:
        print(f"  {line}", file=sys.stderr)


def main(argv: Sequence[str] | None = None, plugins: Iterable[Plugin] | None = None) -> int:
    """Run ``haste``; the exit code (``hastegeo.cli.exits``). ``plugins`` add commands beside the entry points'."""
    args = build_parser(plugins).parse_args(argv)
    if getattr(args, "output", None) is None:
        args.output = default_output()
    try:
        return int(args.handler(args))
    except (Exception, KeyboardInterrupt) as exc:
        if isinstance(exc, BrokenPipeError) and stdout_gone():
            # The reader took what it wanted; say nothing more (nor at exit, when Python flushes).
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return int(ExitCode.OK)
        failure = explain(exc, getattr(args, "url", DEFAULT_URL))
        if failure is None:
            raise  # a bug: its traceback is the report
        if args.debug:
            from hastegeo.utils.redaction import redact

            print(redact("".join(traceback.format_exception(exc))), file=sys.stderr, end="")
        report(failure)
        return int(failure.code)


if __name__ == "__main__":
    sys.exit(main())
