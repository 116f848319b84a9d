"""haste-compute: a queue-driven job pipeline for geospatial ML workloads."""

__version__ = "0.1.0"
