"""The machine side of the local backend: what runs jobs on this machine, not a backend of its own.

The adapter (:mod:`hastegeo.compute.local`) speaks the compute contract to the
pipeline, as the Azure Batch and Azure ML adapters do to their services; this
package plays the service: the jobs' folders on disk and the queue of jobs waiting
for a slot (:mod:`.layout`), and each job's one process (:mod:`.run`, ADR 0015).
Every job's process imports it, so it is standard library only; its ``ruff.toml``
fences out the app's third-party packages and the pipeline's modules.
"""
