"""A sixth workload in one folder: counts the files a job was given, and their bytes.

The folder has the shape of every workload (``hastegeo/workloads/<name>/``):
``DESCRIPTOR`` here, ``params.py``, ``processor.py``, ``run.py`` and
``__main__.py``. Its imports are relative, so the same folder is a workload
whether it sits under ``hastegeo/workloads/`` (found by the registry's scan) or
is installed beside it (found through the ``hastegeo.workloads`` entry point
that ``../haste_tilecount-0.1.dist-info`` declares, as ``pip install`` would).
"""

from __future__ import annotations

from hastegeo.workloads.descriptor import WorkloadDescriptor

from .params import TilecountParams

DESCRIPTOR = WorkloadDescriptor(
    name="tilecount", package=__name__, params=TilecountParams, processor=f"{__name__}.processor:TilecountProcessor"
)
