"""Started by Python in every process whose PYTHONPATH holds this folder (the benches' stack).

With ``HASTE_BENCH_CALLS_DIR`` set, the process counts its storage calls there
(see :mod:`tests.bench.storage_calls`); without it, it does nothing. Workload
processes (``hastegeo.workflows``) are left alone: they use no storage client, and
importing azure-core would slow every job's start.
"""

import os
import sys
from pathlib import Path

if os.environ.get("HASTE_BENCH_CALLS_DIR") and not any("hastegeo.workflows" in arg for arg in sys.orig_argv):
    from tests.bench import storage_calls

    storage_calls.install()
    storage_calls.write_every(Path(os.environ["HASTE_BENCH_CALLS_DIR"]))
