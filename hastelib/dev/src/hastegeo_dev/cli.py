"""``haste dev`` and ``haste demo``: the development stack's commands, added to ``haste`` by this distribution.

The library's ``haste`` knows nothing of them: it loads every ``hastegeo.cli`` entry point
(``hastelib/dev/pyproject.toml`` names :func:`register`), so a machine without hastegeo-dev
has a ``haste`` without them, and the library never imports this package (docs/adr/0013).
``python -m hastegeo_dev`` runs the same ``haste`` with them registered directly, which is
what ``make dev`` and ``make demo`` call.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hastegeo.compute.catalog import backend_names


def default_workdir() -> Path:
    """Where ``haste dev`` keeps Azurite's data, the local backend's job folders and the host's log."""
    from hastegeo_dev.checkout import repo_root

    return repo_root() / ".haste" / "dev"


def cmd_dev(args: argparse.Namespace) -> int:
    from hastegeo_dev.stack import LocalStack

    workdir = Path(args.workdir) if args.workdir else default_workdir()
    with LocalStack(workdir, port=args.port, in_memory=False) as stack:
        print(f"Azurite blob {stack.azurite.blob_url} queue {stack.azurite.queue_url}")
        print(f"Functions host at {stack.base_url}/api  (log: {workdir / 'host.log'}); Ctrl-C stops")
        print(f"Web console at {stack.console_url}", flush=True)
        stack.serve()
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from hastegeo_dev.demo import run_demo

    return run_demo(backend=args.backend, keep=args.keep, serve=args.serve)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``dev`` and ``demo`` to the ``haste`` parser."""
    dev = commands.add_parser("dev", help="run Azurite and the development Functions host until Ctrl-C")
    dev.add_argument("--port", type=int, default=7071)
    dev.add_argument("--workdir", help="where the stack keeps its data (default: .haste/dev in the checkout)")
    dev.set_defaults(handler=cmd_dev)

    demo = commands.add_parser("demo", help="start the embedded stack and run a real job end to end")
    demo.add_argument("--backend", default="local", choices=backend_names())
    demo.add_argument("--keep", action="store_true", help="keep the demo's working folder")
    demo.add_argument(
        "--serve", action="store_true", help="keep the stack and the web console up after the demo until Ctrl-C"
    )
    demo.set_defaults(handler=cmd_demo)
