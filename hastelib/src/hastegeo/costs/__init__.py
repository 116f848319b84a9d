"""What a job's compute cost: a dated price table, the Azure Retail Prices API that refreshes it, and attribution.

* :mod:`hastegeo.costs.prices` — the price table (region → VM size → dedicated and spot
  price per hour, its currency, the date it was taken and its source): the one shipped
  with the app, a file, or a blob the deployment points at (``HASTE_PRICES_BLOB``).
* :mod:`hastegeo.costs.retail` — a client of the public Azure Retail Prices API that builds
  a fresh table (``haste prices refresh``).
* :mod:`hastegeo.costs.attribution` — pure: what one attempt cost (Batch: a share of a
  node, Azure ML: instances, local: a configured rate), and a job's or a group's sum.

Errors raised here (all :class:`~hastegeo.utils.errors.HasteError`)::

    PriceTableError        a table cannot be read or is not a price table (prices.py)
    RetailPricesError      the API could not be read, or answered with nothing usable (retail.py)
    └── NoPricesError      a region had no matching meter: nothing is written

A price that cannot be known is not an error: attribution answers ``amount=None`` and a reason
(docs/adr/0038).
"""
