"""``haste costs --project p1 [--from … --to …]``: what a project's jobs cost, from the API's running totals.

A table of the days (amount, jobs, jobs whose price is not known) and the totals by backend, workload
and group on a terminal; the API's JSON elsewhere (``--output json``). Amounts are shown rounded half
up to the cent; the JSON keeps them exact (docs/adr/0038).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from hastegeo.cli.client import ApiClient
from hastegeo.cli.output import JSON, print_json

ClientOf = Callable[[argparse.Namespace], ApiClient]


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], client_of: ClientOf) -> None:
    """Add ``costs`` to the ``haste`` parser; ``client_of`` builds the API client from the arguments."""
    costs = commands.add_parser(
        "costs",
        help="what a project's jobs cost, by day, backend, workload and group",
        description="What a project's jobs cost, from the running totals the app keeps as jobs end.",
    )
    costs.add_argument("--project", required=True)
    costs.add_argument("--from", dest="start", help="first day, YYYY-MM-DD (default: the first of this month)")
    costs.add_argument("--to", dest="end", help="last day, YYYY-MM-DD (default: today)")
    costs.set_defaults(handler=lambda args: show(args, client_of(args)))


def show(args: argparse.Namespace, client: ApiClient) -> int:
    body = client.costs(args.project, start=args.start, end=args.end)
    if args.output == JSON:
        print_json(body)
        return 0
    for line in lines(body):
        print(line)
    return 0


def cents(amount: str) -> str:
    return str(Decimal(amount).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def lines(body: dict[str, Any]) -> list[str]:
    """The table a terminal shows."""
    currency = body.get("currency") or ""
    out = [f"project {body['projectId']}, {body['from']} to {body['to']}: {cents(body['total'])} {currency}".rstrip()]
    unpriced = body.get("unpriced", 0)
    out.append(
        f"{body['jobs']} job(s) ended" + (f", {unpriced} with no known price (not in the sums)" if unpriced else "")
    )
    if body["days"]:
        out.append(f"{'DAY':<12}{'AMOUNT':>12}{'JOBS':>7}{'UNPRICED':>10}")
        out += [f"{d['day']:<12}{cents(d['amount']):>12}{d['jobs']:>7}{d['unpriced']:>10}" for d in body["days"]]
    for key, title in (("byBackend", "backend"), ("byWorkload", "workload"), ("byGroup", "group")):
        for name, amount in sorted(body.get(key, {}).items()):
            out.append(f"{title} {name}: {cents(amount)} {currency}".rstrip())
    return out
