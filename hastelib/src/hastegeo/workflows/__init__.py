"""The entry points compute ran before workload folders (docs/adr/0037), kept as aliases only.

A provider job submitted by an earlier release runs ``python -m
hastegeo.workflows.<workload>``; it may start after the images are updated
(a Batch task queued for a node, an Azure ML job waiting for its cluster), so
each old module still starts its workload. Nothing submits them any more:
remove this package, with the old argv's fingerprints
(:mod:`hastegeo.compute.fingerprint`), from the first release after 2027-03-01.
"""
