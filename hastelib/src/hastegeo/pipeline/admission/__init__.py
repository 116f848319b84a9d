"""Admission and capacity: which jobs may go to a provider now, and what each backend's queue looks like.

One package, with its own storage (ADR 0032, ADR 0039):

- :mod:`.fairshare`: the book and its rules, pure (seats, limits, projects in turn);
- :mod:`.book`: the book as one document in the jobs container, changed by ETag;
- :mod:`.seats`: :class:`Admission`, what the pipeline asks (a seat) and tells (a seat freed);
- :mod:`.board`: each backend's queue as the reconciler last saw it, for ``GET /api/backends``.

Why a provider makes a job wait (a quota, a pool allocating) is the backends' to say
(:mod:`hastegeo.compute.capacity`); how long the pipeline lets it wait is the poll step's.
"""

from hastegeo.pipeline.admission.seats import Admission, HandOver, limits_of

__all__ = ["Admission", "HandOver", "limits_of"]
