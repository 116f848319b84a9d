"""The workloads: one folder each, found by :mod:`hastegeo.workloads.registry` (docs/adr/0037).

A folder ``<name>/`` holds everything about one workload:

    __init__.py    DESCRIPTOR: its name, its parameters model, where its processor is
    params.py      its parameters (the API validates with them, compute reads params.json with them)
    processor.py   how its job spec is built, and how its outputs are checked after it ran
    run.py         the code that runs on compute, started as ``python -m hastegeo.workloads.<name>``
    __main__.py    that start

``_run/`` is the library the code on compute shares (working directory, progress
log, manifest, parameter reading, raster helpers); ``processor.py`` and
``geospatial.py`` are what the processors share. Nothing here is imported by
this package's ``__init__``: compute imports it before every workload, so it
stays empty.
"""
