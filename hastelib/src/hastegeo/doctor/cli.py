"""``haste doctor``: the command line of the doctor (and ``haste aml check``'s remote part).

Exit codes: 0 every check passed (warnings allowed), 1 a check failed or could not be run,
2 the doctor could not start (no target named, or the ``doctor`` extra is not installed).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, TextIO

from hastegeo.doctor.result import AREAS

if TYPE_CHECKING:
    from hastegeo.doctor.run import Clients

INSTALL = "pip install 'hastegeo[doctor]' (from a checkout: pip install './hastelib[doctor]')"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``doctor`` to the ``haste`` parser. Defaults come from azd's environment values."""
    doctor = subparsers.add_parser(
        "doctor", help="check a deployed environment: roles, Batch quota and pools, Azure ML, sign-in, telemetry"
    )
    doctor.add_argument("--subscription", default=os.environ.get("AZURE_SUBSCRIPTION_ID", ""))
    doctor.add_argument("--resource-group", default=os.environ.get("AZURE_RESOURCE_GROUP", ""))
    doctor.add_argument("--app", default=os.environ.get("FUNCTION_APP_NAME", ""), help="the Function App's name")
    doctor.add_argument("--only", action="append", choices=AREAS, help="run only this area (repeatable)")
    doctor.add_argument("--telemetry-hours", type=int, default=24, help="how far back to look for telemetry")
    doctor.set_defaults(handler=lambda args: run_doctor(args))


def extra_installed() -> bool:
    """Whether the ``doctor`` extra's SDKs are importable (probed without importing them)."""
    from importlib.util import find_spec

    try:
        return all(
            find_spec(name) is not None for name in ("azure.mgmt.web", "azure.mgmt.batch", "azure.monitor.query")
        )
    except ModuleNotFoundError:  # a parent package (azure.mgmt) is missing
        return False


def run_doctor(args: argparse.Namespace, clients: Clients | None = None, out: TextIO = sys.stdout) -> int:
    from hastegeo.doctor.render import as_json, as_table
    from hastegeo.doctor.result import exit_code
    from hastegeo.doctor.run import Target, run

    target = Target(args.subscription, args.resource_group, args.app)
    flags = {"--subscription": target.subscription_id, "--resource-group": target.resource_group, "--app": target.app}
    missing = [flag for flag, value in flags.items() if not value]
    if missing:
        print(
            f"error: name the deployment with {', '.join(missing)} "
            '(or load azd\'s values first: eval "$(azd env get-values)")',
            file=sys.stderr,
        )
        return 2
    if clients is None:
        if not extra_installed():
            print(f"error: the doctor needs its extra: {INSTALL}", file=sys.stderr)
            return 2
        from hastegeo.cli.credential import sign_in_credential
        from hastegeo.doctor.run import default_clients

        clients = default_clients(sign_in_credential(), target.subscription_id)
    results = run(target, clients, args.only or AREAS, telemetry_hours=args.telemetry_hours)
    print(as_json(results) if args.output == "json" else as_table(results), file=out)
    return exit_code(results)
