"""``haste``: submit, follow, cancel and retry jobs; run the development stack and the demo.

Client commands talk to the HTTP API (``--url``, default ``$HASTE_API_URL``
or the development host's address), so they work the same against a
deployed Function App.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hastegeo.cli.client import ApiClient, ApiError, CredentialToken
from hastegeo.cli.output import print_event, print_job

if TYPE_CHECKING:
    from azure.core.credentials import TokenCredential

DEFAULT_URL = "http://127.0.0.1:7071"
EXIT_CODES = {"succeeded": 0, "failed": 1, "cancelled": 3}


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
    )


def sign_in_credential() -> TokenCredential:
    """The Azure CLI's sign-in (``az login``), else a device code sign-in where there is none.

    The device code flow uses the Azure CLI's client id, which the API's app registration
    pre-authorises (infra/scripts/app-registration.sh), so no consent prompt appears.
    """
    from azure.identity import AzureCliCredential, ChainedTokenCredential, DeviceCodeCredential

    return ChainedTokenCredential(AzureCliCredential(), DeviceCodeCredential())


def _parse_inputs(values: Sequence[str]) -> list[dict[str, str]]:
    inputs = []
    for value in values:
        kind, sep, ref = value.partition(":")
        if not sep or kind not in ("blob", "job"):
            raise SystemExit(f"--input takes blob:<name> or job:<id>, not {value!r}")
        inputs.append({"blob": ref} if kind == "blob" else {"jobId": ref})
    return inputs


def _parse_params(values: Sequence[str]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for value in values:
        key, sep, raw = value.partition("=")
        if not sep:
            raise SystemExit(f"--param takes key=value (value may be JSON), not {value!r}")
        try:
            params[key] = json.loads(raw)
        except ValueError:
            params[key] = raw
    return params


def cmd_submit(args: argparse.Namespace) -> int:
    if args.file:
        request = json.loads(Path(args.file).read_text(encoding="utf-8"))
    else:
        if not (args.workload and args.project):
            raise SystemExit("submit needs --workload and --project (or --file)")
        request = {
            "workload": args.workload,
            "projectId": args.project,
            "inputs": _parse_inputs(args.input),
            "parameters": _parse_params(args.param),
        }
        if args.backend:
            request["backend"] = args.backend
    job = _client(args).submit(request, idempotency_key=args.idempotency_key)
    print(job["id"])
    if args.watch:
        return _watch(args, job["id"])
    return 0


def cmd_get(args: argparse.Namespace) -> int:
    job = _client(args).get(args.job_id)
    if args.json:
        print(json.dumps(job, indent=2))
    else:
        print_job(job)
        for event in job.get("history", []):
            print_event(event)
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    for count, job in enumerate(_client(args).list(args.project, state=args.state), start=1):
        print(f"{job['id']}  {job['workload']:<10} {job['backend']:<12} {job['state']:<16} {job['createdAt']}")
        if count >= args.limit:
            break
    return 0


def _watch(args: argparse.Namespace, job_id: str) -> int:
    job = _client(args).watch(job_id, print_event, timeout=args.timeout)
    print_job(job)
    return EXIT_CODES.get(job["state"], 1)


def cmd_watch(args: argparse.Namespace) -> int:
    return _watch(args, args.job_id)


def cmd_cancel(args: argparse.Namespace) -> int:
    job = _client(args).cancel(args.job_id)
    print(f"{job['id']}: {job['state']}")
    return 0


def cmd_retry(args: argparse.Namespace) -> int:
    job = _client(args).retry(args.job_id, idempotency_key=args.idempotency_key)
    print(f"{job['id']}: {job['state']} (retry of {job['retryOf']})")
    return 0


def cmd_dev(args: argparse.Namespace) -> int:
    from hastegeo.cli.stack import LocalStack, repo_root

    workdir = repo_root() / ".haste" / "dev"
    with LocalStack(workdir, port=args.port, in_memory=False) as stack:
        print(f"Azurite blob {stack.azurite.blob_url} queue {stack.azurite.queue_url}")
        print(f"Functions host at {stack.base_url}/api  (log: {workdir / 'host.log'}); Ctrl-C stops")
        print(f"Web console at {stack.console_url}", flush=True)
        stack.serve()
    return 0


def cmd_trace(args: argparse.Namespace) -> int:
    """Print the trace of a job from the JSON lines the development host wrote (HASTE_OTEL_EXPORT=file:PATH)."""
    from pathlib import Path

    from hastegeo.cli.stack import repo_root
    from hastegeo.config import telemetry_settings
    from hastegeo.telemetry.configure import parse_export
    from hastegeo.telemetry.export import job_logs, read_trace, render_trace

    path = Path(args.file) if args.file else None
    if path is None:
        mode, configured = parse_export(telemetry_settings().export)
        path = configured if mode == "file" and configured else repo_root() / ".haste" / "otel.jsonl"
    spans = read_trace(path, args.job_id)
    if not spans:
        print(f"no span of job {args.job_id} in {path}", file=sys.stderr)
        return 1
    render_trace(spans, print)
    for entry in job_logs(path, args.job_id):
        print(f"{entry['time']} {entry['level']} {entry['message']}")
    return 0


def cmd_sample_data(args: argparse.Namespace) -> int:
    import tempfile

    from hastegeo.cli.demo import upload_sample_scene
    from hastegeo.config import load_settings

    settings = load_settings()
    if not settings.storage.connection_string:
        raise SystemExit("sample-data needs AzureWebJobsStorage (a connection string), e.g. from `haste dev`")
    with tempfile.TemporaryDirectory(prefix="haste-scene-") as folder:
        names = upload_sample_scene(
            settings.storage.connection_string,
            Path(folder),
            args.prefix,
            args.size,
            container=settings.storage.inputs_container,
        )
    for name in names:
        print(f"{settings.storage.inputs_container}/{name}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from hastegeo.cli.demo import run_demo

    return run_demo(backend=args.backend, keep=args.keep, serve=args.serve)


def build_parser() -> argparse.ArgumentParser:
    # Choices come from the contract and the backend descriptors (built in or installed), never a copy.
    from hastegeo.compute.contract import WORKLOADS
    from hastegeo.compute.registry import backend_names

    parser = argparse.ArgumentParser(prog="haste", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--url", default=os.environ.get("HASTE_API_URL", DEFAULT_URL), help="API base URL")
    parser.add_argument(
        "--scope",
        default=os.environ.get("HASTE_API_SCOPE") or None,
        help="sign in with azure-identity (az login, else a device code) for this scope, e.g. "
        "api://<client id>/.default (default $HASTE_API_SCOPE; $HASTE_API_TOKEN wins when set)",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    submit = commands.add_parser("submit", help="submit a job")
    submit.add_argument("--file", help="a JSON job request")
    submit.add_argument("--workload", choices=WORKLOADS)
    submit.add_argument("--project")
    submit.add_argument("--backend", choices=["auto", *backend_names()])
    submit.add_argument("--input", action="append", default=[], help="blob:<name> or job:<id> (repeatable)")
    submit.add_argument("--param", action="append", default=[], help="key=value, value may be JSON (repeatable)")
    submit.add_argument("--idempotency-key", help="retrying with the same key returns the same job")
    submit.add_argument("--watch", action="store_true", help="follow the job until it ends")
    submit.add_argument("--timeout", type=float, default=3600)
    submit.set_defaults(handler=cmd_submit)

    get = commands.add_parser("get", help="show a job and its status history")
    get.add_argument("job_id")
    get.add_argument("--json", action="store_true")
    get.set_defaults(handler=cmd_get)

    listing = commands.add_parser("list", help="list a project's jobs, newest first")
    listing.add_argument("--project", required=True)
    listing.add_argument("--state")
    listing.add_argument("--limit", type=int, default=50)
    listing.set_defaults(handler=cmd_list)

    watch = commands.add_parser("watch", help="follow a job until it ends; exit 0 only if it succeeded")
    watch.add_argument("job_id")
    watch.add_argument("--timeout", type=float, default=3600)
    watch.set_defaults(handler=cmd_watch)

    cancel = commands.add_parser("cancel", help="cancel a job")
    cancel.add_argument("job_id")
    cancel.set_defaults(handler=cmd_cancel)

    retry = commands.add_parser("retry", help="run a failed or cancelled job again: a new job, the same request")
    retry.add_argument("job_id")
    retry.add_argument("--idempotency-key", help="the same key returns the retry it already made")
    retry.set_defaults(handler=cmd_retry)

    dev = commands.add_parser("dev", help="run Azurite and the development Functions host until Ctrl-C")
    dev.add_argument("--port", type=int, default=7071)
    dev.set_defaults(handler=cmd_dev)

    trace = commands.add_parser("trace", help="print a job's trace from the development host's telemetry file")
    trace.add_argument("job_id")
    trace.add_argument("--file", help="JSON lines file (default: HASTE_OTEL_EXPORT's file, else .haste/otel.jsonl)")
    trace.set_defaults(handler=cmd_trace)

    sample = commands.add_parser("sample-data", help="generate a synthetic scene and upload it to the inputs container")
    sample.add_argument("--prefix", default="sample/scene", help="blob prefix in the inputs container")
    sample.add_argument("--size", type=int, default=512, help="scene width and height in pixels (multiple of 128)")
    sample.set_defaults(handler=cmd_sample_data)

    demo = commands.add_parser("demo", help="start the embedded stack and run a real job end to end")
    demo.add_argument("--backend", default="local", choices=backend_names())
    demo.add_argument("--keep", action="store_true", help="keep the demo's working folder")
    demo.add_argument(
        "--serve", action="store_true", help="keep the stack and the web console up after the demo until Ctrl-C"
    )
    demo.set_defaults(handler=cmd_demo)

    try:
        from hastegeo.cli import aml
    except ImportError:
        pass
    else:
        aml.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except ApiError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except TimeoutError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 4


if __name__ == "__main__":
    sys.exit(main())
