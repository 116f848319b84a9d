"""The slice of ``MLClient`` the backend uses, and the one factory that builds the real one.

The adapter and the CLI receive a client through :data:`ClientFactory`, so
tests pass :class:`hastegeo_dev.testing.aml_standin.StandInMLClient` (same
surface, real SDK entities and exceptions) and never patch anything.

Retries: the SDK's HTTP pipeline is built with ``retry_total=0`` so that one
owner — :mod:`hastegeo.compute.retry` — spends one
budget per call, and the queue's redelivery retries whole steps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

from hastegeo.compute.azure_ml.settings import AmlSettings
from hastegeo.compute.identity import azure_credential

if TYPE_CHECKING:
    from azure.ai.ml.entities import Compute, Datastore, Environment, Job, Workspace
    from azure.core.credentials import TokenCredential
    from azure.core.polling import LROPoller


class JobsOps(Protocol):
    def create_or_update(self, job: Any, **kwargs: Any) -> Job: ...

    def get(self, name: str) -> Job: ...

    def begin_cancel(self, name: str, **kwargs: Any) -> LROPoller[None]: ...

    def list(self, **kwargs: Any) -> Iterable[Job]: ...


class EnvironmentsOps(Protocol):
    def get(self, name: str, version: str | None = None, label: str | None = None) -> Environment: ...

    def create_or_update(self, environment: Environment) -> Environment: ...


class ComputeOps(Protocol):
    def get(self, name: str) -> Compute: ...


class DatastoresOps(Protocol):
    def get(self, name: str, **kwargs: Any) -> Datastore: ...


class WorkspacesOps(Protocol):
    def get(self, name: str | None = None, **kwargs: Any) -> Workspace | None: ...


class MLClientLike(Protocol):
    """What :class:`azure.ai.ml.MLClient` offers and this backend uses."""

    @property
    def jobs(self) -> JobsOps: ...

    @property
    def environments(self) -> EnvironmentsOps: ...

    @property
    def compute(self) -> ComputeOps: ...

    @property
    def workspaces(self) -> WorkspacesOps: ...

    @property
    def datastores(self) -> DatastoresOps: ...


ClientFactory = Callable[[AmlSettings], MLClientLike]


def build_credential(settings: AmlSettings) -> TokenCredential:
    """The credential for ``AML_IDENTITY_MODE``: managed identity (production) or DefaultAzureCredential."""
    return azure_credential(settings.identity_mode, settings.managed_identity_client_id)


def create_ml_client(settings: AmlSettings, credential: TokenCredential | None = None, **kwargs: Any) -> MLClientLike:
    """The real ``MLClient`` for the configured workspace. Makes no request.

    ``kwargs`` go to ``MLClient`` (``cloud``/``cloud_metadata`` and
    ``connection_verify`` are how the loopback contract test points it at a
    test service).
    """
    from azure.ai.ml import MLClient  # the SDK costs ~1 s to import; only here

    client: MLClientLike = MLClient(
        credential=credential or build_credential(settings),
        subscription_id=settings.subscription_id,
        resource_group_name=settings.resource_group,
        workspace_name=settings.workspace,
        retry_total=0,
        show_progress=False,
        enable_telemetry=False,
        **kwargs,
    )
    return client
