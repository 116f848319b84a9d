"""The price table: the one shipped with the app, reading one from a file or a blob, lookups, and its setting."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest

from hastegeo.costs.prices import (
    PriceTable,
    PriceTableError,
    Priority,
    load_table,
    parse_table,
    shipped_table,
    split_blob_location,
)
from hastegeo.settings.app import CostSettings
from hastegeo.settings.load import load_settings
from hastegeo.utils.errors import ConfigurationError

REPO = Path(__file__).resolve().parents[3]


def infra_defaults() -> tuple[str, set[str]]:
    """The region and VM sizes a deployment left at its defaults uses (infra/main.bicepparam)."""
    text = (REPO / "infra" / "main.bicepparam").read_text(encoding="utf-8")
    defaults = dict(re.findall(r"readEnvironmentVariable\('([A-Z_]+)', '([^']*)'\)", text))
    sizes = {value for name, value in defaults.items() if name.endswith("_VM_SIZE")}
    return defaults["AZURE_LOCATION"], sizes


def test_the_shipped_table_prices_what_a_default_deployment_runs_on() -> None:
    table = shipped_table()
    region, sizes = infra_defaults()
    assert sizes, "the defaults were read"
    for size in sizes:
        for priority in Priority:
            assert table.lookup(region, size, priority).per_hour, (size, priority)
    # What the Batch test service and the Azure ML stand-in report, in their own case.
    assert table.lookup("westeurope", "standard_d2s_v3", Priority.DEDICATED).per_hour == Decimal("0.12")
    assert table.lookup("WestEurope", "STANDARD_DS3_V2", Priority.SPOT).per_hour


def test_the_shipped_table_says_it_was_not_fetched_and_how_to_refresh_it() -> None:
    table = shipped_table()
    assert "NOT fetched" in table.source
    assert "haste prices refresh" in table.note
    assert table.currency == "USD"


def test_a_lookup_names_what_is_missing() -> None:
    table = shipped_table()
    assert table.lookup("antarctica", "Standard_D4s_v5", Priority.DEDICATED).reason == (
        "the price table does not cover region 'antarctica' (eastus, northeurope, westeurope)"
    )
    assert table.lookup("eastus", "Standard_M416s_v2", Priority.SPOT).reason == (
        "the price table has no VM size 'Standard_M416s_v2' in eastus"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "is not JSON"),
        ('{"currency": "USD", "source": "s", "regions": {}}', "takenAt: Field required"),
        ('{"currency": "usd", "takenAt": "2026-01-01", "source": "s", "regions": {}}', "currency: String should match"),
        (
            '{"currency": "USD", "takenAt": "2026-01-01", "source": "s", '
            '"regions": {"eastus": {"A": {"dedicatedPerHour": "-1"}}}}',
            "regions.eastus.A.dedicatedPerHour",
        ),
        (
            '{"currency": "USD", "takenAt": "2026-01-01", "source": "s", "regions": {"eastus": {}, "EastUS": {}}}',
            "listed twice",
        ),
        ('{"version": 2, "currency": "USD", "takenAt": "2026-01-01", "source": "s", "regions": {}}', "version 2"),
    ],
)
def test_what_is_not_a_price_table_is_refused_with_where_and_why(text: str, message: str) -> None:
    with pytest.raises(PriceTableError, match=re.escape(message)) as refused:
        parse_table(text, "the file t.json")
    assert str(refused.value).startswith("the file t.json is not")


def test_a_table_round_trips_through_its_json_exactly() -> None:
    table = shipped_table()
    assert parse_table(table.to_json(), "again") == table
    assert '"dedicatedPerHour": "0.096"' in table.to_json()


def test_the_app_reads_the_blob_its_setting_names_and_never_falls_back_silently() -> None:
    written = shipped_table().model_copy(update={"source": "the blob's"}).to_json().encode()
    asked: list[tuple[str, str]] = []

    def read(container: str, name: str) -> bytes:
        asked.append((container, name))
        return written

    assert load_table("prices/tables/2026-12.json", read).source == "the blob's"
    assert asked == [("prices", "tables/2026-12.json")]
    assert load_table("").source == shipped_table().source

    def gone(container: str, name: str) -> bytes:
        raise OSError("BlobNotFound")

    with pytest.raises(PriceTableError, match=r"cannot read the price table prices/p.json \(HASTE_PRICES_BLOB\)"):
        load_table("prices/p.json", gone)
    with pytest.raises(PriceTableError, match="no storage client"):
        load_table("prices/p.json")


@pytest.mark.parametrize("location", ["prices", "prices/", "/p.json", "Prices/p.json", "a/p.json", "a--b/p.json"])
def test_a_blob_location_is_a_container_and_a_name(location: str) -> None:
    with pytest.raises(ValueError, match="not"):
        split_blob_location(location)


def test_the_settings_check_the_blob_location_and_default_the_local_rate_to_zero() -> None:
    env = {"AzureWebJobsStorage": "UseDevelopmentStorage=true"}
    costs = load_settings(env).costs
    assert costs == CostSettings(prices_blob="", local_price_per_slot_hour=Decimal(0))
    configured = load_settings({**env, "HASTE_PRICES_BLOB": "prices/t.json", "HASTE_LOCAL_PRICE_PER_SLOT_HOUR": "0.05"})
    assert (configured.costs.prices_blob, configured.costs.local_price_per_slot_hour) == (
        "prices/t.json",
        Decimal("0.05"),
    )
    with pytest.raises(ConfigurationError, match="HASTE_PRICES_BLOB"):
        load_settings({**env, "HASTE_PRICES_BLOB": "no-name"})
    with pytest.raises(ConfigurationError, match="HASTE_LOCAL_PRICE_PER_SLOT_HOUR"):
        load_settings({**env, "HASTE_LOCAL_PRICE_PER_SLOT_HOUR": "-1"})


def test_priorities_read_as_the_services_spell_them() -> None:
    assert [Priority.parse(v) for v in ("Dedicated", "lowPriority", "low_priority", "Low Priority", "SPOT")] == [
        Priority.DEDICATED,
        Priority.SPOT,
        Priority.SPOT,
        Priority.SPOT,
        Priority.SPOT,
    ]
    with pytest.raises(ValueError, match="not a priority"):
        Priority.parse("regular")


def test_a_table_lists_its_vm_sizes_once_whatever_the_region() -> None:
    table = PriceTable.model_validate(
        {
            "currency": "USD",
            "takenAt": "2026-12-01",
            "source": "s",
            "regions": {"a": {"Standard_B": {}, "Standard_a": {}}, "b": {"Standard_B": {}}},
        }
    )
    assert table.skus() == ["Standard_a", "Standard_B"]
