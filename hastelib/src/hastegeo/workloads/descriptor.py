"""What the app knows about a workload without building its processor: one :class:`WorkloadDescriptor` each.

A workload folder's ``__init__`` exports its descriptor. Compute imports that
package before it runs the workload (``python -m <package>``), and the registry
imports every one to list the workloads (the API's validation does, in the
Functions host and in the CLI), so a descriptor holds only what is light: the
standard library and the parameter models. The processor, which needs the job
models, is named by ``"module:Class"`` and built on first use
(:func:`hastegeo.workloads.processor.processors`).
"""

from __future__ import annotations

from dataclasses import dataclass

from hastegeo.models.params import Params


@dataclass(frozen=True)
class WorkloadDescriptor:
    """A workload, as its folder declares it.

    ``package``: the folder's package; compute runs ``python -m <package>``.
    ``params``: the model compute validates ``params.json`` with (the processor's
    request model may add keys only the pipeline reads). ``processor``:
    ``"module:Class"``, built once by the registry. ``rank``: where the workload
    is listed (the OpenAPI enum, the console's choice, whose first is its default);
    equal ranks list by name.
    """

    name: str
    package: str
    params: type[Params]
    processor: str
    rank: int = 100
