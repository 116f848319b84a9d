"""A client of the Azure Retail Prices API, and the price table built from what it answers.

The API is public and needs no sign-in: ``GET {base}/api/retail/prices?api-version=…&$filter=…``
answers ``{"BillingCurrency", "Items": [...], "NextPageLink": ..., "Count"}``; a page holds at
most the documented page size, and ``NextPageLink`` (``null`` on the last page) is the URL of the
next one. ``currencyCode='EUR'`` asks for another currency (USD is the reference; the others are
"for your reference"). From api-version 2023-01-01-preview on, filter values are case-sensitive, so
VM sizes are asked for as Azure spells them (``Standard_D4s_v5``).

Each item is one meter. What this module keeps (:func:`meter_of`): ``serviceName`` "Virtual
Machines", ``type`` "Consumption" (not ``Reservation`` nor ``DevTestConsumption``),
``unitOfMeasure`` "1 Hour", a ``productName`` without "Windows" (Linux), the asked currency;
``skuName`` containing "Spot" is the spot meter, "Low Priority" the retired low-priority meter
(skipped: low priority is billed at the spot rate, docs/adr/0038), anything else the dedicated
one. Several rows for one meter (a price change, a non-primary meter region): the primary one,
then the latest ``effectiveStartDate`` not in the future.

azure-core's :class:`RetryPolicy` is the one retry owner (GETs on 408/429/5xx and connection
errors); the transport reads the environment once (:mod:`hastegeo.utils.transport`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import urlsplit

from azure.core import PipelineClient
from azure.core.exceptions import AzureError
from azure.core.pipeline.policies import HeadersPolicy, RetryPolicy, UserAgentPolicy
from azure.core.pipeline.transport import HttpTransport, RequestsTransport
from azure.core.rest import HttpRequest

from hastegeo.costs.prices import PriceTable, Priority, SkuPrice
from hastegeo.utils.errors import HasteError
from hastegeo.utils.transport import transport_options

DEFAULT_BASE_URL = "https://prices.azure.com"
PATH = "/api/retail/prices"
API_VERSION = "2023-01-01-preview"
SERVICE = "Virtual Machines"
HOUR = "1 Hour"
# At most this many VM sizes per request: the filter is part of the URL.
SKUS_PER_REQUEST = 10
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


class RetailPricesError(HasteError):
    """The Retail Prices API could not be read, or answered with something else than its documented shape."""


class NoPricesError(RetailPricesError):
    """A region had no meter for any VM size asked for: no table is built, the old one stays."""

    def __init__(self, regions: Sequence[str], skus: Sequence[str]) -> None:
        super().__init__(
            f"no Linux consumption price for any of {', '.join(skus)} in region(s) {', '.join(regions)}: "
            "is the region an armRegionName (e.g. westeurope) and are the VM sizes spelled as Azure does "
            "(e.g. Standard_D4s_v5)? Nothing was written"
        )
        self.regions = list(regions)
        self.skus = list(skus)


@dataclass(frozen=True)
class Meter:
    """One hourly Linux consumption meter of one VM size in one region."""

    region: str
    sku: str
    priority: Priority
    per_hour: Decimal
    currency: str
    since: date | None
    primary: bool


def _date(value: Any) -> date | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).date()
    except ValueError:
        return None


def meter_of(item: Mapping[str, Any], currency: str) -> Meter | None:
    """The meter an API item is, or ``None`` for an item a VM price table does not use (pure; see the module)."""
    if item.get("serviceName") != SERVICE or item.get("type") != "Consumption":
        return None
    if item.get("unitOfMeasure") != HOUR or item.get("currencyCode") != currency:
        return None
    product, sku_name = str(item.get("productName") or ""), str(item.get("skuName") or "")
    if "windows" in product.lower() or "low priority" in sku_name.lower():
        return None
    region, sku = item.get("armRegionName"), item.get("armSkuName")
    if not isinstance(region, str) or not region or not isinstance(sku, str) or not sku:
        return None
    try:
        per_hour = Decimal(str(item.get("unitPrice", item.get("retailPrice"))))
    except InvalidOperation:
        return None
    if not per_hour.is_finite() or per_hour < 0:
        return None
    return Meter(
        region=region.lower(),
        sku=sku,
        priority=Priority.SPOT if "spot" in sku_name.lower() else Priority.DEDICATED,
        per_hour=per_hour,
        currency=currency,
        since=_date(item.get("effectiveStartDate")),
        primary=item.get("isPrimaryMeterRegion") is not False,
    )


def vm_filter(region: str, skus: Sequence[str]) -> str:
    """The OData ``$filter`` for the hourly consumption meters of ``skus`` in ``region`` (pure)."""

    def quoted(value: str) -> str:
        return "'" + value.replace("'", "''") + "'"

    sizes = " or ".join(f"armSkuName eq {quoted(sku)}" for sku in skus)
    return (
        f"serviceName eq {quoted(SERVICE)} and priceType eq 'Consumption' "
        f"and armRegionName eq {quoted(region)} and ({sizes})"
    )


class RetailPricesClient:
    """Reads the Retail Prices API at ``base_url`` (another one only for a loopback test double)."""

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        *,
        currency: str = "USD",
        retry_total: int = 3,
        timeout_s: float = 30.0,
        max_pages: int = 200,
        transport: HttpTransport[Any, Any] | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        """Raises ValueError for a base URL that is neither https nor http on a loopback address."""
        parts = urlsplit(base_url)
        loopback = parts.hostname in _LOOPBACK
        if not parts.hostname or (parts.scheme != "https" and not (parts.scheme == "http" and loopback)):
            raise ValueError(f"the Retail Prices API URL must be https (http only on loopback), not {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.currency = currency
        self._host = (parts.scheme, parts.hostname)
        self._max_pages = max_pages
        self._timeout_s = timeout_s
        if transport is None:
            transport = RequestsTransport(**transport_options(os.environ if environ is None else environ))
        self._client: PipelineClient[HttpRequest, Any] = PipelineClient(
            base_url=self.base_url,
            policies=[HeadersPolicy(), UserAgentPolicy("haste-compute"), RetryPolicy(retry_total=retry_total)],
            transport=transport,
        )

    def items(self, filter: str) -> Iterator[dict[str, Any]]:
        """Every item the filter selects, page after page (``NextPageLink``).

        Raises:
            RetailPricesError: unreachable or an error status after the retries, a page that is not the
                documented shape, a next page elsewhere than this API, or more than ``max_pages`` pages.
        """
        params = {"api-version": API_VERSION, "$filter": filter}
        if self.currency != "USD":
            params["currencyCode"] = f"'{self.currency}'"
        request = HttpRequest("GET", self.base_url + PATH, params=params)
        seen: set[str] = set()
        for page in range(1, self._max_pages + 1):
            body = self._get(request, page)
            items = body.get("Items")
            if not isinstance(items, list):
                raise RetailPricesError(f"page {page} of {self.base_url}{PATH} has no Items list")
            yield from (item for item in items if isinstance(item, dict))
            link = body.get("NextPageLink")
            if not link:
                return
            parts = urlsplit(str(link))
            if (parts.scheme, parts.hostname) != self._host or str(link) in seen:
                raise RetailPricesError(f"page {page} points to an unexpected next page: {link}")
            seen.add(str(link))
            request = HttpRequest("GET", str(link))
        raise RetailPricesError(f"more than {self._max_pages} pages for one filter: narrow the regions or VM sizes")

    def _get(self, request: HttpRequest, page: int) -> dict[str, Any]:
        try:
            response = self._client.send_request(
                request, connection_timeout=self._timeout_s, read_timeout=self._timeout_s
            )
        except AzureError as exc:
            raise RetailPricesError(f"the Retail Prices API at {self.base_url} did not answer: {exc.message}") from exc
        if response.status_code != 200:
            raise RetailPricesError(
                f"the Retail Prices API answered HTTP {response.status_code} for page {page}: {response.text()[:300]}"
            )
        try:
            body = json.loads(response.text())
        except ValueError as exc:
            raise RetailPricesError(f"page {page} of the Retail Prices API is not JSON: {exc}") from exc
        if not isinstance(body, dict):
            raise RetailPricesError(f"page {page} of the Retail Prices API is not a JSON object")
        return body

    def meters(self, region: str, skus: Sequence[str]) -> list[Meter]:
        """The Linux hourly consumption meters (dedicated and spot) of ``skus`` in ``region``."""
        found: list[Meter] = []
        for start in range(0, len(skus), SKUS_PER_REQUEST):
            chunk = skus[start : start + SKUS_PER_REQUEST]
            wanted = {sku.lower() for sku in chunk}
            for item in self.items(vm_filter(region, chunk)):
                meter = meter_of(item, self.currency)
                if meter and meter.region == region.lower() and meter.sku.lower() in wanted:
                    found.append(meter)
        return found

    def close(self) -> None:
        self._client.close()


def _best(meters: Iterable[Meter], today: date) -> Meter:
    """Of several rows for one meter: the primary meter region's, then the latest price already in effect."""
    ordered = sorted(
        meters, key=lambda m: (m.primary, (m.since or date.min) <= today, m.since or date.min, -m.per_hour)
    )
    return ordered[-1]


def build_table(
    meters: Iterable[Meter],
    regions: Sequence[str],
    skus: Sequence[str],
    *,
    currency: str,
    taken_at: date,
    source: str,
) -> tuple[PriceTable, list[str]]:
    """The table of ``regions`` × ``skus`` from ``meters``, and one line per price that was not found (pure).

    Raises:
        NoPricesError: a region had no meter at all (naming every such region).
    """
    grouped: dict[tuple[str, str, Priority], list[Meter]] = {}
    for meter in meters:
        grouped.setdefault((meter.region, meter.sku.lower(), meter.priority), []).append(meter)
    empty = [region for region in regions if not any(key[0] == region.lower() for key in grouped)]
    if empty:
        raise NoPricesError(empty, skus)
    table: dict[str, dict[str, SkuPrice]] = {}
    gaps: list[str] = []
    for region in regions:
        entries: dict[str, SkuPrice] = {}
        for sku in skus:
            best = {
                priority: _best(grouped[(region.lower(), sku.lower(), priority)], taken_at)
                for priority in Priority
                if (region.lower(), sku.lower(), priority) in grouped
            }
            missing = [str(priority) for priority in Priority if priority not in best]
            if len(missing) == len(Priority):
                gaps.append(f"{region}: no price for {sku}")
                continue
            gaps += [f"{region}: no {priority} price for {sku}" for priority in missing]
            dedicated, spot = best.get(Priority.DEDICATED), best.get(Priority.SPOT)
            entries[(dedicated or spot or next(iter(best.values()))).sku] = SkuPrice(
                dedicated_per_hour=dedicated.per_hour if dedicated else None,
                spot_per_hour=spot.per_hour if spot else None,
                dedicated_since=dedicated.since if dedicated else None,
                spot_since=spot.since if spot else None,
            )
        table[region.lower()] = entries
    return (
        PriceTable(currency=currency, taken_at=taken_at, source=source, regions=table),
        gaps,
    )


def fetch_table(
    client: RetailPricesClient,
    regions: Sequence[str],
    skus: Sequence[str],
    *,
    today: Callable[[], date] = date.today,
) -> tuple[PriceTable, list[str]]:
    """A fresh table of ``regions`` × ``skus`` from the API, and the prices it did not find.

    Raises:
        NoPricesError: a region had no meter for any of ``skus``.
        RetailPricesError: the API could not be read.
    """
    meters = [meter for region in regions for meter in client.meters(region, skus)]
    source = f"Azure Retail Prices API ({client.base_url}{PATH}, api-version {API_VERSION}), Linux consumption meters"
    return build_table(meters, regions, skus, currency=client.currency, taken_at=today(), source=source)
