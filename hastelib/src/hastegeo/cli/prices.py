"""``haste prices show`` and ``haste prices refresh``: the price table jobs are costed with.

``refresh`` reads the public Azure Retail Prices API (no sign-in) for each ``--region``: the
Linux pay-as-you-go and spot meters of the VM sizes named by ``--sku``, or else of those the
current table knows. It writes the new table atomically to ``--out FILE`` or to the blob
``HASTE_PRICES_BLOB`` names (``--blob``, with your storage sign-in), or prints it. A region with
no matching meter is an error and nothing is written, so the old table stays. Prices missing for
some VM sizes are warnings: those jobs will have no cost, and say why.

Exit codes (``hastegeo.cli.exits``): 0 written or shown; 2 usage (bad option, an unreadable
table); 5 a region had no matching meter; 7 the API could not be read.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hastegeo.cli.exits import ExitCode, Failure, usage
from hastegeo.cli.output import JSON, print_json
from hastegeo.costs.prices import PriceTable, PriceTableError, parse_table, shipped_table, split_blob_location
from hastegeo.costs.retail import DEFAULT_BASE_URL, NoPricesError, RetailPricesClient, RetailPricesError, fetch_table

if TYPE_CHECKING:
    from azure.storage.blob import BlobServiceClient


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``prices show`` and ``prices refresh`` to the ``haste`` parser."""
    prices = subparsers.add_parser(
        "prices", help="the price table jobs are costed with: show it, refresh it from the Azure Retail Prices API"
    )
    commands = prices.add_subparsers(dest="prices_command", required=True, metavar="COMMAND")

    show = commands.add_parser("show", help="print a price table (default: the one shipped with the app)")
    where = show.add_mutually_exclusive_group()
    where.add_argument("--file", help="a table written by `haste prices refresh --out`")
    where.add_argument("--blob", action="store_true", help="the table at HASTE_PRICES_BLOB (your storage sign-in)")
    show.add_argument("--region", action="append", default=[], help="only this region (repeatable)")
    show.set_defaults(handler=cmd_show)

    refresh = commands.add_parser(
        "refresh", help="fetch Linux dedicated and spot prices per hour from the Azure Retail Prices API"
    )
    refresh.add_argument("--region", action="append", required=True, help="an armRegionName, e.g. westeurope")
    refresh.add_argument(
        "--sku",
        action="append",
        default=[],
        help="VM sizes as Azure spells them, e.g. Standard_D4s_v5 (repeatable or comma-separated; "
        "default: those the current table knows)",
    )
    target = refresh.add_mutually_exclusive_group()
    target.add_argument("--out", metavar="FILE", help="write the table to FILE (replaced only on success)")
    target.add_argument("--blob", action="store_true", help="write it to the blob HASTE_PRICES_BLOB names")
    refresh.add_argument("--currency", default="USD", help="ISO 4217 code (USD is Azure's reference)")
    refresh.add_argument("--prices-url", default=DEFAULT_BASE_URL, help=argparse.SUPPRESS)  # a test double's
    refresh.set_defaults(handler=cmd_refresh)


# ---------------------------------------------------------------- where tables live


def _blob_location(environ: Mapping[str, str]) -> tuple[str, str]:
    from hastegeo.settings.app import CostSettings
    from hastegeo.settings.fields import load_section

    location = load_section(CostSettings, environ).prices_blob
    if not location:
        raise usage("--blob needs HASTE_PRICES_BLOB (container/blob-name in the app's storage account)")
    return split_blob_location(location)


def _blob_service(environ: Mapping[str, str]) -> BlobServiceClient:
    """The app's storage account as the settings name it (a connection string, or the account and your sign-in)."""
    from hastegeo.runtime import storage_clients
    from hastegeo.settings.load import load_settings

    blobs, queues = storage_clients(load_settings(environ))
    queues.close()
    return blobs


def _read_file(path: Path) -> PriceTable | None:
    if not path.exists():
        return None
    try:
        return parse_table(path.read_bytes(), str(path))
    except OSError as exc:
        raise usage(f"cannot read {path}: {exc.strerror or exc}") from exc


def _read_blob(blobs: BlobServiceClient, container: str, name: str) -> PriceTable | None:
    from azure.core.exceptions import ResourceNotFoundError

    try:
        data = blobs.get_blob_client(container, name).download_blob().readall()
    except ResourceNotFoundError:
        return None
    return parse_table(data, f"the blob {container}/{name}")


# ---------------------------------------------------------------- commands


def cmd_show(args: argparse.Namespace) -> int:
    try:
        if args.file:
            table = _read_file(Path(args.file))
            if table is None:
                raise Failure(ExitCode.NOT_FOUND, f"no price table at {args.file}")
        elif args.blob:
            container, name = _blob_location(os.environ)
            blobs = _blob_service(os.environ)
            with blobs:
                table = _read_blob(blobs, container, name)
            if table is None:
                raise Failure(ExitCode.NOT_FOUND, f"no price table at {container}/{name} (HASTE_PRICES_BLOB)")
        else:
            table = shipped_table()
    except PriceTableError as exc:
        raise usage(str(exc)) from exc
    if args.region:
        wanted = {region.lower() for region in args.region}
        table = table.model_copy(update={"regions": {k: v for k, v in table.regions.items() if k.lower() in wanted}})
    _print_table(table, args.output)
    return 0


def _skus(given: Sequence[str], current: PriceTable) -> list[str]:
    named = [sku.strip() for value in given for sku in value.split(",") if sku.strip()]
    skus = list(dict.fromkeys(named)) if named else current.skus()
    if not skus:
        raise usage("no VM size to price: name them with --sku (the current table lists none)")
    return skus


def cmd_refresh(args: argparse.Namespace) -> int:
    regions = list(dict.fromkeys(region.strip().lower() for region in args.region if region.strip()))
    if not regions:
        raise usage("--region needs an armRegionName, e.g. westeurope")
    blob: tuple[str, str] | None = _blob_location(os.environ) if args.blob else None
    blobs = _blob_service(os.environ) if blob else None
    try:
        try:
            current = _read_blob(blobs, *blob) if blobs and blob else _read_file(Path(args.out)) if args.out else None
            skus = _skus(args.sku, current or shipped_table())
        except PriceTableError as exc:
            raise usage(f"{exc}; name the VM sizes with --sku, or move that table away") from exc
        table, gaps = _fetch(args, regions, skus)
        destination = _write(table, args.out, blobs, blob)
    finally:
        if blobs is not None:
            blobs.close()
    for gap in gaps:
        print(f"warning: {gap}: jobs on it will have no cost, with this reason", file=sys.stderr)
    if args.output == JSON:
        print_json({"written": destination, "missing": gaps, "table": _document(table)})
    else:
        if destination:
            print(f"wrote {destination}")
        _print_table(table, args.output)
    return 0


def _fetch(args: argparse.Namespace, regions: list[str], skus: list[str]) -> tuple[PriceTable, list[str]]:
    try:
        client = RetailPricesClient(args.prices_url, currency=args.currency.upper())
    except ValueError as exc:
        raise usage(str(exc)) from exc
    try:
        return fetch_table(client, regions, skus)
    except NoPricesError as exc:
        raise Failure(ExitCode.NOT_FOUND, str(exc)) from exc
    except RetailPricesError as exc:
        raise Failure(ExitCode.UNAVAILABLE, f"{exc}; nothing was written") from exc
    finally:
        client.close()


def _write(
    table: PriceTable, out: str | None, blobs: BlobServiceClient | None, blob: tuple[str, str] | None
) -> str | None:
    """Write ``table`` to the file ``out`` or the ``blob``, whole or not at all; where it went (None: nowhere)."""
    text = table.to_json()
    if out:
        from hastegeo.utils.files import write_text

        try:
            write_text(Path(out), text)
        except OSError as exc:
            raise usage(f"cannot write {out}: {exc.strerror or exc}") from exc
        return out
    if blobs is not None and blob is not None:
        from azure.storage.blob import ContentSettings

        # One Put Blob: readers see the old table or the new one.
        blobs.get_blob_client(*blob).upload_blob(
            text.encode(), overwrite=True, content_settings=ContentSettings(content_type="application/json")
        )
        return "/".join(blob)
    return None


# ---------------------------------------------------------------- printing


def _document(table: PriceTable) -> dict[str, Any]:
    return table.model_dump(mode="json", by_alias=True, exclude_none=True)


def _print_table(table: PriceTable, output: str) -> None:
    if output == JSON:
        print_json(_document(table))
        return
    print(f"prices in {table.currency} per hour, taken {table.taken_at.isoformat()}: {table.source}")
    if table.note:
        print(f"note: {table.note}")
    print(f"{'region':<16} {'VM size':<26} {'dedicated':>12} {'spot':>12}")
    for region, skus in sorted(table.regions.items()):
        for sku, price in sorted(skus.items(), key=lambda item: item[0].lower()):
            dedicated = "-" if price.dedicated_per_hour is None else str(price.dedicated_per_hour)
            spot = "-" if price.spot_per_hour is None else str(price.spot_per_hour)
            print(f"{region:<16} {sku:<26} {dedicated:>12} {spot:>12}")
