"""Started by Python in every process whose PYTHONPATH holds this folder (the benches' host).

With ``HASTE_BENCH_CALLS_DIR`` set, the process counts its storage calls there
(see :mod:`tests.bench.storage_calls`); without it, it does nothing.
"""

import os
from pathlib import Path

if os.environ.get("HASTE_BENCH_CALLS_DIR"):
    from tests.bench import storage_calls

    storage_calls.install()
    storage_calls.write_every(Path(os.environ["HASTE_BENCH_CALLS_DIR"]))
