"""A job's checkpoint folder, copied to its blob prefix while it runs and put back before its next attempt.

ADR 0044. :mod:`.layout` is the format (pure), :mod:`.store` moves sets to and from blob storage,
:mod:`.agent` is what runs beside a workload on compute. Only :mod:`.layout` is light enough for a
workload's launcher to import unconditionally.
"""
