"""Started by Python in every process whose PYTHONPATH holds this folder (the chaos suite's stacks).

With ``HASTE_CHAOS_STARTS_DIR`` set, a local job's process (``hastegeo.compute.local_node.run
ROOT NAME``, which becomes the workload: ADR 0015) appends its pid to ``<dir>/<NAME>`` as it
starts. The ground-truth checks count these lines: how often each workload really started,
written by the workload itself rather than by the admission code that launched it.

Any other process runs the next ``sitecustomize`` on its path instead (the benches' storage-call
counter, say), as Python would have without this folder.
"""

import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_starts = os.environ.get("HASTE_CHAOS_STARTS_DIR")
if _starts and "hastegeo.compute.local_node.run" in sys.orig_argv:
    _fd = os.open(
        os.path.join(_starts, os.path.basename(sys.orig_argv[-1])), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644
    )
    try:
        os.write(_fd, f"{os.getpid()}\n".encode())  # one write, O_APPEND: lines never interleave
    finally:
        os.close(_fd)
else:
    for _folder in sys.path:
        _next = os.path.join(_folder or os.getcwd(), "sitecustomize.py")
        if os.path.abspath(_folder or os.getcwd()) != _HERE and os.path.isfile(_next):
            _spec = importlib.util.spec_from_file_location("_next_sitecustomize", _next)
            if _spec is not None and _spec.loader is not None:
                _spec.loader.exec_module(importlib.util.module_from_spec(_spec))
            break
