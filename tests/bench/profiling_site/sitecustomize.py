"""Started by Python in every process whose PYTHONPATH holds this folder (``accept_bench --profile``).

With ``HASTE_BENCH_PROFILE_DIR`` set, every thread of the process runs under its own
``cProfile`` profiler timed by ``time.thread_time`` (CPU time of that thread, so waiting
counts nothing), and the merged statistics are written to ``<dir>/<pid>.prof`` at exit.
Only development host processes are profiled (``host-<pid>``: HTTP and functions;
``queues-<pid>``: a queue worker). A measurement instrument only.
"""

import os
import sys

if os.environ.get("HASTE_BENCH_PROFILE_DIR") and "hastegeo_dev.devhost" in sys.orig_argv:
    from tests.bench import thread_profile

    role = "queues" if "--queues-only" in sys.orig_argv else "host"
    thread_profile.install(os.environ["HASTE_BENCH_PROFILE_DIR"], f"{role}-{os.getpid()}")
