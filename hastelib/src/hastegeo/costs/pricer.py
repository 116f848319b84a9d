"""Prices an ended job from what its backends told of its runs, at the app's price table (docs/adr/0038).

The table is read once per process, the first time a job ends (the shipped one, or the blob
``HASTE_PRICES_BLOB`` names). A table that cannot be read prices every job as unknown, with the
reason, and is read again for the next job: a cost is never 0 for want of a price.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from decimal import Decimal

from hastegeo.costs.attribution import Cost, unknown_cost
from hastegeo.costs.prices import BlobReader, PriceTable, PriceTableError, load_table
from hastegeo.costs.usage import JobUsage

log = logging.getLogger(__name__)


class Pricer:
    def __init__(
        self,
        location: str = "",
        read_blob: BlobReader | None = None,
        *,
        local_rate: Decimal = Decimal(0),
        table: PriceTable | None = None,
    ) -> None:
        """``location``: ``container/name`` of the table (empty: the shipped one); ``table``: this one instead."""
        self._location = location
        self._read_blob = read_blob
        self._local_rate = local_rate
        self._table = table
        self._lock = threading.Lock()

    def table(self) -> PriceTable:
        """The table, read on first use.

        Raises:
            PriceTableError: it cannot be read.
        """
        with self._lock:
            if self._table is None:
                self._table = load_table(self._location, self._read_blob)
            return self._table

    def currency(self) -> str:
        """The table's currency (USD, Azure's reference, when the table cannot be read)."""
        try:
            return self.table().currency
        except PriceTableError:
            return "USD"

    def cost(self, usage: JobUsage | None) -> Cost:
        """What a job that ran ``usage`` cost (a job that never ran costs 0 in the table's currency)."""
        try:
            table = self.table()
        except PriceTableError as exc:
            log.warning("a job's cost is unknown: %s", exc)
            return unknown_cost(f"the price table could not be read: {exc}")
        return (usage or JobUsage()).cost(table, local_rate=self._local_rate)


Price = Callable[[JobUsage | None], Cost]
