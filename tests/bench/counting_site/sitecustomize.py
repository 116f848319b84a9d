"""Started by Python in every process whose PYTHONPATH holds this folder (the benches' stack).

With ``HASTE_BENCH_CALLS_DIR`` set, the process counts its storage calls there
(see :mod:`tests.bench.storage_calls`); without it, it does nothing. Only the
development host's own processes (``python -m hastegeo_dev.devhost``: the host and
its queue workers) are counted: they make every storage call of the stack. Workload
processes (``hastegeo.compute.local_node.run``, ``hastegeo.workloads``) use no
storage client, and loading the counter (azure-core, a writer thread, a counts file)
into each would inflate the timings and memory the benches report beside the counts.
"""

import os
import sys
from pathlib import Path

if os.environ.get("HASTE_BENCH_CALLS_DIR") and "hastegeo_dev.devhost" in sys.orig_argv:
    from tests.bench import storage_calls

    storage_calls.install()
    storage_calls.write_every(Path(os.environ["HASTE_BENCH_CALLS_DIR"]))
