"""A Batch-compatible service on loopback for tests and local trials of the ``azure_batch`` backend.

Start it in-process::

    service = BatchTestService(azurite.connection_string).start()
    service.url, service.account_name, service.account_key   # BATCH_ACCOUNT_URL / _NAME / _KEY
    service.faults.node_lost_after_completion(not_ready_calls=3)
    service.calls(job_id)                                      # requests per operation for one job
    service.stop()

or as a process: ``python -m hastegeo_dev.testing.batch_service --azurite "<connection string>"``.
"""

from hastegeo_dev.testing.batch_service.faults import OPERATIONS, Faults
from hastegeo_dev.testing.batch_service.handler import API_VERSION
from hastegeo_dev.testing.batch_service.server import BatchTestService

__all__ = ["API_VERSION", "OPERATIONS", "BatchTestService", "Faults"]
