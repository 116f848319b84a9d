"""The price table: region → VM size (``armSkuName``) → price per hour, dedicated and spot, dated.

A table is one JSON document (camelCase, prices as decimal strings so nothing is rounded)::

    {"version": 1, "currency": "USD", "takenAt": "2026-12-06",
     "source": "Azure Retail Prices API …", "note": "…",
     "regions": {"westeurope": {"Standard_D4s_v5": {"dedicatedPerHour": "0.23", "spotPerHour": "0.046",
                                                    "dedicatedSince": "2024-05-01", "spotSince": "2026-11-01"}}}}

Three places hold one: the table shipped with the app (``prices.json`` next to this module,
package data), a file (``haste prices refresh --out``), and a blob of the app's storage
account named by ``HASTE_PRICES_BLOB`` as ``container/name`` (``haste prices refresh --blob``).
Lookups ignore the case of regions and VM sizes (services report ``standard_d2s_v3``).
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Callable
from datetime import date
from decimal import Decimal
from importlib import resources
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from hastegeo.utils.errors import HasteError

if TYPE_CHECKING:
    from azure.storage.blob import BlobServiceClient

SHIPPED_TABLE = "prices.json"
TABLE_VERSION = 1
# Reads one blob of the app's storage account: (container, name) → its bytes (the caller's storage client).
BlobReader = Callable[[str, str], bytes]
_CONTAINER = re.compile(r"[a-z0-9](?!.*--)[a-z0-9-]{1,61}[a-z0-9]")  # with fullmatch


class PriceTableError(HasteError):
    """A price table cannot be read, or what was read is not a price table. The message says where."""


class Priority(enum.StrEnum):
    """How the compute was bought: at the pay-as-you-go price, or at the variable spot price.

    Batch low-priority nodes and Azure ML low-priority clusters are ``spot`` (docs/adr/0038).
    """

    DEDICATED = "dedicated"
    SPOT = "spot"

    @classmethod
    def parse(cls, value: object) -> Priority:
        """``dedicated``; ``spot``, ``lowpriority``, ``low_priority`` or ``low priority`` (any case) → spot.

        Raises:
            ValueError: none of these.
        """
        text = str(getattr(value, "value", value)).strip().lower().replace("_", "").replace(" ", "")
        if text == "dedicated":
            return cls.DEDICATED
        if text in ("spot", "lowpriority"):
            return cls.SPOT
        raise ValueError(f"{value!r} is not a priority: dedicated, spot or low priority")


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, alias_generator=to_camel, extra="forbid", frozen=True)


class SkuPrice(_Model):
    """The hourly prices of one VM size in one region; a meter the API did not list is ``None``."""

    dedicated_per_hour: Decimal | None = Field(None, ge=0, description="Pay-as-you-go (Linux) price per hour.")
    spot_per_hour: Decimal | None = Field(None, ge=0, description="Spot price per hour (variable).")
    dedicated_since: date | None = Field(None, description="The dedicated meter's effectiveStartDate.")
    spot_since: date | None = Field(None, description="The spot meter's effectiveStartDate.")

    def per_hour(self, priority: Priority) -> Decimal | None:
        return self.dedicated_per_hour if priority is Priority.DEDICATED else self.spot_per_hour


class PriceLookup(_Model):
    """One answer of :meth:`PriceTable.lookup`: a price per hour, or ``None`` and why."""

    per_hour: Decimal | None
    reason: str | None = None
    since: date | None = None


class PriceTable(_Model):
    """Hourly prices by region and VM size, in one currency, taken on one date from one source."""

    version: int = Field(TABLE_VERSION, description="Format of the document.")
    currency: str = Field(pattern=r"^[A-Z]{3}$", description="ISO 4217 code of every price in the table.")
    taken_at: date = Field(description="The day the prices were read from the source.")
    source: str = Field(min_length=1, description="Where the prices came from (API and filter, or who wrote them).")
    note: str = Field("", description="What a reader must know, e.g. that the prices were not fetched.")
    regions: dict[str, dict[str, SkuPrice]] = Field(description="armRegionName → armSkuName → prices.")

    @model_validator(mode="after")
    def _one_entry_per_name(self) -> PriceTable:
        if self.version != TABLE_VERSION:
            raise ValueError(f"version {self.version} is not supported (expected {TABLE_VERSION})")
        seen: set[str] = set()
        for region, skus in self.regions.items():
            if region.lower() in seen:
                raise ValueError(f"region {region!r} is listed twice (names ignore case)")
            seen.add(region.lower())
            lowered = [sku.lower() for sku in skus]
            twice = sorted({sku for sku in lowered if lowered.count(sku) > 1})
            if twice:
                raise ValueError(f"{region}: VM sizes listed twice (names ignore case): {twice}")
        return self

    def skus(self) -> list[str]:
        """Every VM size the table prices in some region, sorted, in the case the table spells it."""
        return sorted({sku for skus in self.regions.values() for sku in skus}, key=str.lower)

    def lookup(self, region: str, sku: str, priority: Priority) -> PriceLookup:
        """The price per hour of ``sku`` in ``region`` bought as ``priority``; ``per_hour=None`` with a reason
        when the table cannot say (a region it does not cover, a VM size or a meter it does not list)."""
        skus = next((entry for name, entry in self.regions.items() if name.lower() == region.strip().lower()), None)
        if skus is None:
            covered = ", ".join(sorted(self.regions)) or "none"
            return PriceLookup(per_hour=None, reason=f"the price table does not cover region {region!r} ({covered})")
        price = next((entry for name, entry in skus.items() if name.lower() == sku.strip().lower()), None)
        if price is None:
            return PriceLookup(per_hour=None, reason=f"the price table has no VM size {sku!r} in {region}")
        per_hour = price.per_hour(priority)
        if per_hour is None:
            return PriceLookup(per_hour=None, reason=f"the price table has no {priority} price for {sku} in {region}")
        since = price.dedicated_since if priority is Priority.DEDICATED else price.spot_since
        return PriceLookup(per_hour=per_hour, since=since)

    def to_json(self) -> str:
        """The document, indented, keys in a stable order (what ``haste prices refresh`` writes)."""
        return json.dumps(self.model_dump(mode="json", by_alias=True, exclude_none=True), indent=2) + "\n"


def parse_table(data: bytes | str, origin: str) -> PriceTable:
    """The table in ``data``; ``origin`` names where it came from in the error.

    Raises:
        PriceTableError: not JSON, or not a price table (the fields at fault are named).
    """
    try:
        document: Any = json.loads(data)
    except ValueError as exc:
        raise PriceTableError(f"{origin} is not JSON: {exc}") from exc
    try:
        return PriceTable.model_validate(document)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or '(table)'}: {error['msg']}" for error in exc.errors()
        )
        raise PriceTableError(f"{origin} is not a price table: {problems}") from None


def shipped_table() -> PriceTable:
    """The table shipped with the app (package data), dated and sourced in its own fields.

    Raises:
        PriceTableError: the package was built without it, or it is not a table.
    """
    try:
        data = resources.files(__package__ or "hastegeo.costs").joinpath(SHIPPED_TABLE).read_bytes()
    except OSError as exc:
        raise PriceTableError(f"the shipped price table {SHIPPED_TABLE} is missing from the package: {exc}") from exc
    return parse_table(data, f"the shipped price table ({SHIPPED_TABLE})")


def split_blob_location(location: str) -> tuple[str, str]:
    """``container/name`` → ``(container, name)``.

    Raises:
        ValueError: not a container name followed by a blob name.
    """
    container, sep, name = location.strip().partition("/")
    if not sep or not name or not container or name.endswith("/"):
        raise ValueError(f"{location!r} is not container/blob-name")
    if not _CONTAINER.fullmatch(container):
        raise ValueError(f"{container!r} is not a storage container name (3-63 lowercase letters, digits, '-')")
    return container, name


def blob_reader(blobs: BlobServiceClient) -> BlobReader:
    """A :data:`BlobReader` that reads with ``blobs`` (the app's blob client), for :func:`load_table`."""

    def read(container: str, name: str) -> bytes:
        return bytes(blobs.get_blob_client(container, name).download_blob().readall())

    return read


def load_table(location: str, read_blob: BlobReader | None = None) -> PriceTable:
    """The table the app uses: the blob at ``location`` (``container/name``, ``HASTE_PRICES_BLOB``) when set,
    else the shipped one. ``read_blob`` reads it with the app's storage client.

    Raises:
        PriceTableError: the blob cannot be read or holds no table (the shipped table is not used
            instead: a deployment that points at a table means that table).
    """
    if not location.strip():
        return shipped_table()
    container, name = split_blob_location(location)
    if read_blob is None:
        raise PriceTableError(f"HASTE_PRICES_BLOB names {location}, but no storage client was given to read it")
    try:
        data = read_blob(container, name)
    except HasteError:
        raise
    except Exception as exc:  # the storage SDK's errors, whatever their class: say which blob and why
        raise PriceTableError(f"cannot read the price table {location} (HASTE_PRICES_BLOB): {exc}") from exc
    return parse_table(data, f"the price table {location} (HASTE_PRICES_BLOB)")
