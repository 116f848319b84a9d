"""The library the code on compute shares: working directory, progress log and manifest (:mod:`.harness`),
parameters (:mod:`.params`), raster and vector helpers. Not a workload (the registry skips ``_`` folders)."""
