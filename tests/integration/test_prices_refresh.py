"""``haste prices refresh`` and ``show`` against the loopback Retail Prices API (hastegeo_dev.testing.retail_prices):
paging, dedicated and spot meters, Windows and other meters left out, a region with no match (a clear error, the old
table kept), and the table in a blob the app reads back."""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest
from azure.storage.blob import BlobServiceClient

from hastegeo.cli.exits import ExitCode
from hastegeo.cli.main import main
from hastegeo.costs.prices import Priority, blob_reader, load_table, parse_table
from hastegeo_dev.devhost.azurite import Azurite
from hastegeo_dev.testing.retail_prices import RetailPricesDouble, vm_item

D4 = "Standard_D4s_v5"
T4 = "Standard_NC4as_T4_v3"
D2 = "Standard_D2s_v3"
CATALOGUE = [
    vm_item("westeurope", D4, "0.23"),
    vm_item("westeurope", D4, "0.046", spot=True, since="2026-11-28T00:00:00Z"),
    # Newer than the Linux meters, so each would win if it were taken for one:
    vm_item("westeurope", D4, "0.414", windows=True, since="2026-12-01T00:00:00Z"),  # Windows
    vm_item("westeurope", D4, "0.021", low_priority=True, since="2026-12-01T00:00:00Z"),  # retired low priority
    vm_item("westeurope", D4, "0.18", price_type="DevTestConsumption"),
    vm_item("westeurope", T4, "0.602"),
    vm_item("westeurope", T4, "0.1204", spot=True),
    vm_item("westeurope", T4, "0.88", spot=True, windows=True, since="2026-12-01T00:00:00Z"),
    vm_item("eastus", D4, "0.192"),
    vm_item("eastus", D4, "0.0384", spot=True),
    vm_item("eastus", T4, "0.526"),  # no spot meter listed here
    vm_item("eastus", D2, "0.096"),
    vm_item("westeurope", D4, "0.25", currency="EUR"),
]


@pytest.fixture
def prices() -> Iterator[RetailPricesDouble]:
    with RetailPricesDouble(CATALOGUE, page_size=2) as double:
        yield double


def refresh(double: RetailPricesDouble, *args: str) -> int:
    return main(["prices", "refresh", "--prices-url", double.url, "--output", "json", *args])


def old_table(path: Path, skus: tuple[str, ...] = (D4, T4)) -> bytes:
    document = {
        "currency": "USD",
        "takenAt": "2026-01-01",
        "source": "the table before",
        "regions": {"westeurope": {sku: {"dedicatedPerHour": "1"} for sku in skus}},
    }
    data = json.dumps(document).encode()
    path.write_bytes(data)
    return data


def test_refresh_pages_through_the_answers_and_keeps_linux_dedicated_and_spot_prices(
    prices: RetailPricesDouble, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "prices.json"
    old_table(out)
    assert refresh(prices, "--region", "westeurope", "--region", "EastUS", "--out", str(out)) == 0

    table = parse_table(out.read_bytes(), str(out))
    assert sorted(table.regions) == ["eastus", "westeurope"]
    assert table.lookup("westeurope", D4, Priority.DEDICATED).per_hour == Decimal("0.23")
    spot = table.lookup("westeurope", D4, Priority.SPOT)
    assert (spot.per_hour, str(spot.since)) == (Decimal("0.046"), "2026-11-28")
    assert table.lookup("westeurope", T4, Priority.SPOT).per_hour == Decimal("0.1204")
    assert table.lookup("eastus", T4, Priority.DEDICATED).per_hour == Decimal("0.526")
    assert table.lookup("eastus", T4, Priority.SPOT).reason == f"the price table has no spot price for {T4} in eastus"
    assert D2 not in table.regions["eastus"], "only the VM sizes the old table knew"
    assert "Azure Retail Prices API" in table.source
    assert str(table.taken_at) != "2026-01-01"

    pages = [query for query in prices.requests if "$skip" in query]
    assert pages, "the answers came in pages of two, followed by NextPageLink"
    filters = {query["$filter"][0] for query in prices.requests}
    assert all("priceType eq 'Consumption'" in text and "serviceName eq 'Virtual Machines'" in text for text in filters)
    assert all(f"armSkuName eq '{D2}'" not in text for text in filters)

    report = json.loads(capsys.readouterr().out)
    assert report["written"] == str(out)
    assert report["missing"] == [f"eastus: no spot price for {T4}"]
    assert report["table"]["regions"]["westeurope"][D4] == {
        "dedicatedPerHour": "0.23",
        "spotPerHour": "0.046",
        "dedicatedSince": "2024-01-01",
        "spotSince": "2026-11-28",
    }


def test_a_region_with_no_match_is_a_clear_error_and_the_old_table_stays(
    prices: RetailPricesDouble, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "prices.json"
    before = old_table(out)
    code = refresh(prices, "--region", "westeurope", "--region", "southindia", "--out", str(out))
    assert code == ExitCode.NOT_FOUND
    error = capsys.readouterr().err
    assert "southindia" in error
    assert "westeurope" not in error.split("region(s)")[1].split(":")[0]
    assert "Nothing was written" in error
    assert out.read_bytes() == before
    assert sorted(path.name for path in tmp_path.iterdir()) == ["prices.json"], "no temporary file left behind"


def test_an_api_that_refuses_is_reported_and_the_old_table_stays(
    prices: RetailPricesDouble, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "prices.json"
    before = old_table(out)
    prices.fail_next(403)
    assert refresh(prices, "--region", "westeurope", "--out", str(out)) == ExitCode.UNAVAILABLE
    assert "HTTP 403" in capsys.readouterr().err
    assert out.read_bytes() == before


def test_a_busy_api_is_asked_again(prices: RetailPricesDouble, tmp_path: Path) -> None:
    out = tmp_path / "prices.json"
    prices.fail_next(503)
    assert refresh(prices, "--region", "westeurope", "--sku", f"{D4},{T4}", "--out", str(out)) == 0
    assert parse_table(out.read_bytes(), str(out)).lookup("westeurope", T4, Priority.DEDICATED).per_hour == Decimal(
        "0.602"
    )


def test_another_currency_is_asked_for_by_its_code(prices: RetailPricesDouble, tmp_path: Path) -> None:
    out = tmp_path / "prices.json"
    assert refresh(prices, "--region", "westeurope", "--sku", D4, "--currency", "eur", "--out", str(out)) == 0
    table = parse_table(out.read_bytes(), str(out))
    assert (table.currency, table.lookup("westeurope", D4, Priority.DEDICATED).per_hour) == ("EUR", Decimal("0.25"))
    assert {query["currencyCode"][0] for query in prices.requests} == {"'EUR'"}


def test_show_prints_a_written_table_and_says_when_there_is_none(
    prices: RetailPricesDouble, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "prices.json"
    assert refresh(prices, "--region", "eastus", "--sku", D2, "--out", str(out)) == 0
    capsys.readouterr()
    assert main(["prices", "show", "--file", str(out), "--output", "table"]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert shown[0].startswith("prices in USD per hour, taken ")
    assert shown[-1].split() == ["eastus", D2, "0.096", "-"]
    assert main(["prices", "show", "--file", str(tmp_path / "none.json")]) == ExitCode.NOT_FOUND


@pytest.mark.azurite
def test_refresh_writes_the_blob_the_app_then_reads(
    prices: RetailPricesDouble,
    azurite: Azurite,
    clean_env: pytest.MonkeyPatch,
    unique: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    location = f"prices-{unique}/tables/prices.json"
    blobs = BlobServiceClient.from_connection_string(azurite.connection_string)
    blobs.create_container(f"prices-{unique}")
    clean_env.setenv("AzureWebJobsStorage", azurite.connection_string)
    clean_env.setenv("HASTE_PRICES_BLOB", location)

    assert refresh(prices, "--region", "westeurope", "--sku", D4, "--blob") == 0
    assert json.loads(capsys.readouterr().out)["written"] == location
    table = load_table(location, blob_reader(blobs))
    assert table.lookup("westeurope", D4, Priority.SPOT).per_hour == Decimal("0.046")

    # A refresh that fails leaves the blob as it was.
    etag = blobs.get_blob_client(f"prices-{unique}", "tables/prices.json").get_blob_properties().etag
    assert refresh(prices, "--region", "southindia", "--blob") == ExitCode.NOT_FOUND
    assert blobs.get_blob_client(f"prices-{unique}", "tables/prices.json").get_blob_properties().etag == etag

    capsys.readouterr()
    assert main(["prices", "show", "--blob", "--output", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["regions"]["westeurope"][D4]["dedicatedPerHour"] == "0.23"
