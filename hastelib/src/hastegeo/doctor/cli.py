"""``haste doctor``: the command line of the doctor (and ``haste aml check``'s remote part).

Exit codes: 0 every check passed (warnings allowed), 1 a check failed or could not be run,
2 the doctor could not start (no target named, or the ``doctor`` extra is not installed).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
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
    doctor.add_argument(
        "--groups-claim",
        choices=("application", "security"),
        default=os.environ.get("HASTE_GROUPS_CLAIM") or None,
        help="the deployment's HASTE_GROUPS_CLAIM (security: the documented path without Entra ID P1); "
        "unset: either form passes",
    )
    doctor.add_argument(
        "--deferred-ok",
        action="store_true",
        help="report a failure whose fix docs/deploy.md leaves for after the deploy (a quota request) "
        "without failing the exit code",
    )
    doctor.add_argument("--summary", help="also append the report as a Markdown table to this file")
    doctor.add_argument("--azd-env", help="azd environment to read values from (default: AZURE_ENV_NAME, else azd's)")
    doctor.set_defaults(handler=lambda args: run_doctor(args))


AZD_KEYS = {
    "subscription": "AZURE_SUBSCRIPTION_ID",
    "resource_group": "AZURE_RESOURCE_GROUP",
    "app": "FUNCTION_APP_NAME",
    "groups_claim": "HASTE_GROUPS_CLAIM",
}


def azd_values(start: Path, name: str | None = None) -> dict[str, str]:
    """The values azd keeps for an environment (``.azure/<env>/.env``), found from ``start`` upwards.

    The same ``KEY="value"`` lines `azd env get-values` prints. The environment is ``name``, else
    ``AZURE_ENV_NAME``, else azd's default (``.azure/config.json``). Nothing found: empty.
    """
    for folder in (start, *start.parents):
        azure = folder / ".azure"
        if not azure.is_dir():
            continue
        env = name or os.environ.get("AZURE_ENV_NAME")
        if not env:
            try:
                env = json.loads((azure / "config.json").read_text(encoding="utf-8")).get("defaultEnvironment")
            except (OSError, ValueError):
                env = None
        path = azure / str(env) / ".env" if env else None
        if path is None or not path.is_file():
            return {}
        return _dotenv(path.read_text(encoding="utf-8"))
    return {}


def _dotenv(text: str) -> dict[str, str]:
    values = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.removeprefix("export ").split("=", 1)
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1].replace('\\"', '"')
        values[key.strip()] = value
    return values


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

    azd = azd_values(Path.cwd(), getattr(args, "azd_env", None))
    for attribute, key in AZD_KEYS.items():
        if not getattr(args, attribute, None) and azd.get(key):
            setattr(args, attribute, azd[key])
    target = Target(args.subscription, args.resource_group, args.app)
    flags = {"--subscription": target.subscription_id, "--resource-group": target.resource_group, "--app": target.app}
    missing = [flag for flag, value in flags.items() if not value]
    if missing:
        print(
            f"error: name the deployment with {', '.join(missing)}, or run the doctor from the project folder "
            "after `azd provision` (it reads azd's .azure/<environment>/.env itself; --azd-env picks one)",
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
    claim = getattr(args, "groups_claim", None)
    if claim not in ("application", "security"):
        claim = None  # an unknown value in the environment: judge by the registration as it is
    results = run(target, clients, args.only or AREAS, telemetry_hours=args.telemetry_hours, groups_claim=claim)
    print(as_json(results) if args.output == "json" else as_table(results), file=out)
    if getattr(args, "summary", None):
        from hastegeo.doctor.render import as_markdown

        with open(args.summary, "a", encoding="utf-8") as summary:
            summary.write(as_markdown(results) + "\n")
    return exit_code(results, deferred_ok=bool(getattr(args, "deferred_ok", False)))
