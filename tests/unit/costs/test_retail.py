"""The Retail Prices API's items read as meters, and the table built from them (pure parts of hastegeo.costs.retail)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

import pytest

from hastegeo.costs.prices import Priority
from hastegeo.costs.retail import NoPricesError, RetailPricesClient, build_table, meter_of, vm_filter
from hastegeo_dev.testing.retail_prices import parse_filter, vm_item

TODAY = date(2026, 12, 6)


def build(items: list[dict[str, Any]], regions: list[str], skus: list[str]) -> Any:
    meters = [meter for item in items if (meter := meter_of(item, "USD"))]
    return build_table(meters, regions, skus, currency="USD", taken_at=TODAY, source="test")


@pytest.mark.parametrize(
    ("changes", "kept"),
    [
        ({}, True),
        ({"productName": "Virtual Machines Dsv5 Series Windows"}, False),
        ({"type": "Reservation"}, False),
        ({"type": "DevTestConsumption"}, False),
        ({"unitOfMeasure": "1/Month"}, False),
        ({"currencyCode": "EUR"}, False),
        ({"serviceName": "Azure Machine Learning"}, False),
        ({"skuName": "D4s v5 Low Priority"}, False),
        ({"unitPrice": "n/a"}, False),
        ({"armSkuName": ""}, False),
    ],
)
def test_only_linux_hourly_consumption_meters_in_the_currency_are_kept(changes: dict[str, Any], kept: bool) -> None:
    item = {**vm_item("westeurope", "Standard_D4s_v5", "0.23"), **changes}
    assert (meter_of(item, "USD") is not None) is kept


def test_a_spot_meter_is_told_by_its_sku_name() -> None:
    meter = meter_of(vm_item("WestEurope", "Standard_D4s_v5", "0.046", spot=True), "USD")
    assert meter is not None
    assert (meter.region, meter.priority, meter.per_hour) == ("westeurope", Priority.SPOT, Decimal("0.046"))


def test_of_several_rows_the_primary_meter_and_the_latest_price_in_effect_win() -> None:
    sku = "Standard_D4s_v5"
    items = [
        vm_item("westeurope", sku, "0.20", since="2024-01-01T00:00:00Z"),
        vm_item("westeurope", sku, "0.23", since="2026-06-01T00:00:00Z"),
        vm_item("westeurope", sku, "0.99", since="2027-01-01T00:00:00Z"),  # not yet in effect
        vm_item("westeurope", sku, "0.01", since="2026-11-01T00:00:00Z", primary=False),
    ]
    table, gaps = build(items, ["westeurope"], [sku])
    price = table.regions["westeurope"][sku]
    assert (price.dedicated_per_hour, price.dedicated_since) == (Decimal("0.23"), date(2026, 6, 1))
    assert gaps == [f"westeurope: no spot price for {sku}"]


def test_every_region_without_any_meter_is_named_and_no_table_is_built() -> None:
    with pytest.raises(NoPricesError) as refused:
        build(
            [vm_item("eastus", "Standard_D2s_v3", "0.096")],
            ["westeurope", "eastus", "brazilsouth"],
            ["Standard_D2s_v3"],
        )
    assert refused.value.regions == ["westeurope", "brazilsouth"]


def test_a_vm_size_missing_in_a_region_is_a_gap_not_a_zero() -> None:
    table, gaps = build([vm_item("eastus", "Standard_D2s_v3", "0.096")], ["eastus"], ["Standard_D2s_v3", "Standard_X"])
    assert list(table.regions["eastus"]) == ["Standard_D2s_v3"]
    assert "eastus: no price for Standard_X" in gaps


def test_the_filter_selects_exactly_the_asked_meters() -> None:
    text = vm_filter("westeurope", ["Standard_D4s_v5", "O'Brien"])
    assert text == (
        "serviceName eq 'Virtual Machines' and priceType eq 'Consumption' and armRegionName eq 'westeurope' "
        "and (armSkuName eq 'Standard_D4s_v5' or armSkuName eq 'O''Brien')"
    )
    selected = parse_filter(text)
    assert selected(vm_item("westeurope", "Standard_D4s_v5", "1"))
    assert selected(vm_item("westeurope", "O'Brien", "1"))
    assert not selected(vm_item("westeurope", "standard_d4s_v5", "1")), "values are case-sensitive"
    assert not selected(vm_item("eastus", "Standard_D4s_v5", "1"))
    assert not selected(vm_item("westeurope", "Standard_D4s_v5", "1", price_type="Reservation"))


@pytest.mark.parametrize("url", ["http://prices.example.com", "ftp://127.0.0.1", "prices.azure.com"])
def test_the_api_is_reached_over_https_except_on_loopback(url: str) -> None:
    with pytest.raises(ValueError, match="https"):
        RetailPricesClient(url)
    RetailPricesClient("http://127.0.0.1:1").close()
