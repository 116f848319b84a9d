"""A loopback stand-in for the Azure Retail Prices API (``GET /api/retail/prices``), on 127.0.0.1 only.

Held to what Microsoft documents for ``https://prices.azure.com/api/retail/prices``: no sign-in;
an optional ``api-version``; ``$filter`` in OData (``field eq 'value'`` joined by ``and``/``or``,
parentheses, ``contains(field, 'text')``; ``priceType`` filters the items' ``type``), values
compared case-sensitively (api-version 2023-01-01-preview and later); ``currencyCode='EUR'`` for
another currency; answers ``{"BillingCurrency", "CustomerEntityId", "CustomerEntityType", "Items",
"NextPageLink", "Count"}``, ``NextPageLink`` being the next page's URL (``$skip``) or ``null``.
What the documentation does not say, and the double decides: a filter it cannot read is a 400
``{"error": {"code", "message"}}``; pages hold ``page_size`` items (the service: up to 1,000).
``fail_next`` scripts outages (503, 429).

Usage::

    items = [vm_item("westeurope", "Standard_D4s_v5", "0.23"), vm_item(..., spot=True), ...]
    with RetailPricesDouble(items, page_size=2) as prices:
        client = RetailPricesClient(prices.url)
        ...
        prices.requests  # the query of every request, parsed, in order
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from hastegeo_dev.testing.loopback import LoopbackService, answer, answer_json, error, fault_body

PATH = "/api/retail/prices"
_TOKEN = re.compile(r"\s*(\(|\)|'(?:[^']|'')*'|[A-Za-z_][A-Za-z0-9_]*|,)")
# Filter fields as the query names them → the item's field.
_FIELDS = {"priceType": "type"}

Predicate = Callable[[dict[str, Any]], bool]


def vm_item(
    region: str,
    sku: str,
    price: str,
    *,
    spot: bool = False,
    low_priority: bool = False,
    windows: bool = False,
    price_type: str = "Consumption",
    currency: str = "USD",
    since: str = "2024-01-01T00:00:00Z",
    primary: bool = True,
) -> dict[str, Any]:
    """One Virtual Machines meter in the API's documented item shape (the fields a reader sees)."""
    series = sku.removeprefix("Standard_").replace("_", " ")
    kind = " Spot" if spot else " Low Priority" if low_priority else ""
    return {
        "currencyCode": currency,
        "tierMinimumUnits": 0.0,
        "retailPrice": float(price),
        "unitPrice": float(price),
        "armRegionName": region,
        "location": region,
        "effectiveStartDate": since,
        "meterId": f"meter-{region}-{sku}-{kind.strip() or 'dedicated'}-{'win' if windows else 'linux'}",
        "meterName": f"{series}{kind}",
        "productId": f"product-{sku}",
        "skuId": f"sku-{sku}",
        "productName": f"Virtual Machines {series} Series{' Windows' if windows else ''}",
        "skuName": f"{series}{kind}",
        "serviceName": "Virtual Machines",
        "serviceId": "DZH313Z7MMC8",
        "serviceFamily": "Compute",
        "unitOfMeasure": "1 Hour",
        "type": price_type,
        "isPrimaryMeterRegion": primary,
        "armSkuName": sku,
    }


class FilterError(ValueError):
    """A ``$filter`` the double cannot read."""


def parse_filter(text: str) -> Predicate:
    """The predicate of an OData filter of the documented subset (raises :class:`FilterError`)."""
    tokens = [match.group(1) for match in _TOKEN.finditer(text)]
    if "".join(tokens).replace(" ", "") != text.replace(" ", ""):
        raise FilterError(f"cannot read the filter {text!r}")
    position = 0

    def peek() -> str | None:
        return tokens[position] if position < len(tokens) else None

    def take(expected: str | None = None) -> str:
        nonlocal position
        token = peek()
        if token is None or (expected is not None and token != expected):
            raise FilterError(f"expected {expected or 'more'} at token {position} of {text!r}")
        position += 1
        return token

    def value() -> str:
        token = take()
        if not token.startswith("'"):
            raise FilterError(f"expected a quoted value, got {token!r}")
        return token[1:-1].replace("''", "'")

    def field(name: str) -> str:
        return _FIELDS.get(name, name)

    def atom() -> Predicate:
        token = take()
        if token == "(":  # noqa: S105 - a filter token, not a password
            inner = disjunction()
            take(")")
            return inner
        if token == "contains":  # noqa: S105
            take("(")
            name = field(take())
            take(",")
            needle = value()
            take(")")
            return lambda item: needle in str(item.get(name, ""))
        name = field(token)
        take("eq")
        expected = value()
        return lambda item: str(item.get(name, "")) == expected

    def conjunction() -> Predicate:
        parts = [atom()]
        while peek() == "and":
            take("and")
            parts.append(atom())
        return lambda item: all(part(item) for part in parts)

    def disjunction() -> Predicate:
        parts = [conjunction()]
        while peek() == "or":
            take("or")
            parts.append(conjunction())
        return lambda item: any(part(item) for part in parts)

    predicate = disjunction()
    if peek() is not None:
        raise FilterError(f"unexpected {peek()!r} in {text!r}")
    return predicate


class RetailPricesDouble(LoopbackService):
    def __init__(self, items: Iterable[dict[str, Any]] = (), *, page_size: int = 100) -> None:
        super().__init__(("GET",))
        self.items = list(items)
        self.page_size = page_size
        self.requests: list[dict[str, list[str]]] = []

    @property
    def url(self) -> str:
        """The base URL, as ``https://prices.azure.com`` is the real one's."""
        return self.base_url

    def serve(self, handler: BaseHTTPRequestHandler) -> None:
        url = urlsplit(handler.path)
        query = parse_qs(url.query, keep_blank_values=True)
        with self._lock:
            self.requests.append(query)
        fault = self.next_fault()
        if fault is not None:
            return answer(handler, fault, fault_body(fault))
        if url.path != PATH:
            return answer(handler, 404, error("NotFound", f"no such path {url.path}"))
        try:
            selected = parse_filter(query["$filter"][0]) if query.get("$filter") else (lambda item: True)
            skip = int(query.get("$skip", ["0"])[0])
        except (FilterError, ValueError) as exc:
            return answer(handler, 400, error("BadRequest", str(exc)))
        currency = query.get("currencyCode", ["'USD'"])[0].strip("'")
        with self._lock:
            matched = [item for item in self.items if item.get("currencyCode") == currency and selected(item)]
        page = matched[skip : skip + self.page_size]
        following = skip + self.page_size
        next_link = None
        if following < len(matched):
            params = {key: values[0] for key, values in query.items() if key != "$skip"}
            next_link = f"{self.url}{PATH}?{urlencode({**params, '$skip': following})}"
        body = {
            "BillingCurrency": currency,
            "CustomerEntityId": "Default",
            "CustomerEntityType": "Retail",
            "Items": page,
            "NextPageLink": next_link,
            "Count": len(page),
        }
        return answer_json(handler, 200, body)
