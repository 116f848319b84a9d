"""A stand-in for ``azure.ai.ml.MLClient``: the surface the Azure ML backend uses, scripted per test.

It returns REAL SDK entities (jobs go through the SDK's own REST conversion,
so ``jobs.get`` answers exactly what ``MLClient.jobs.get`` would build from
the service's JSON) and raises REAL ``azure.core`` / ``azure.ai.ml``
exceptions. Nothing is sent anywhere.

Scripting::

    client = StandInMLClient()
    client.fail("jobs.create_or_update", http_error(503, "ServiceUnavailable"))  # next call raises, then works
    handle = backend.submit(spec)
    client.set_status(name, "Running")
    client.set_status(name, "Failed", error=("UserError", "exit code 2"))

``client.calls`` lists ``(operation, name)`` in order, so tests assert that a
resubmit made no second PUT or that a missing Environment was created once.

Nothing runs a job unless a compute is attached: :class:`hastegeo_dev.testing.aml_compute.StandInCluster`
runs each job created from then on as a real process (``state.on_create``).
"""

from __future__ import annotations

import json
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from azure.ai.ml.entities import AzureBlobDatastore, Compute, Datastore, Environment, Job, Workspace  # noqa: TID251
from azure.ai.ml.entities._job.to_rest_functions import to_rest_job_object  # noqa: TID251
from azure.ai.ml.exceptions import (  # noqa: TID251
    ErrorTarget,
    ValidationErrorType,
    ValidationException,
)
from azure.core.exceptions import (
    ClientAuthenticationError,
    HttpResponseError,
    ResourceExistsError,
    ResourceNotFoundError,
)
from azure.core.polling import LROPoller, NoPolling

from hastegeo.compute.azure_ml.events import run_status_event

STREAM_LOG = "user_logs/std_log.txt"  # the command's output, as a job on Azure ML's common runtime lists it


class _Response:
    """Just enough of an HTTP response for azure-core's exceptions to parse the error body."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        self.status_code = status
        self.reason = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found"}.get(status, "Error")
        self.headers = {"Content-Type": "application/json"}
        self.content_type = "application/json"
        self._text = json.dumps(body)
        self.request = None

    def text(self, encoding: str | None = None) -> str:
        return self._text

    def body(self) -> bytes:
        return self._text.encode()


def http_error(status: int, code: str = "Error", message: str = "scripted error") -> HttpResponseError:
    """The azure-core exception the real client raises for ``status`` with an ARM error body."""
    response = _Response(status, {"error": {"code": code, "message": message}})
    kind: type[HttpResponseError] = {
        401: ClientAuthenticationError,
        404: ResourceNotFoundError,
        409: ResourceExistsError,
    }.get(status, HttpResponseError)
    return kind(response=response)


def label_not_found(name: str, label: str) -> ValidationException:
    """What ``environments.get(name, label=…)`` raises for a missing asset (not a 404!)."""
    message = f"Asset {name} does not exist in workspace ws."
    return ValidationException(
        message=message,
        no_personal_data_message=message,
        target=ErrorTarget.ASSET,  # type: ignore[arg-type]  # the SDK itself passes these str constants
        error_type=ValidationErrorType.RESOURCE_NOT_FOUND,
    )


@dataclass
class _RootError:
    code: str
    message: str


@dataclass
class _Warning:
    source: str
    message: str


@dataclass
class _RunDetails:
    error: Any = None
    status: str = ""
    warnings: list[_Warning] = field(default_factory=list)
    start_time_utc: datetime | None = None  # when the run started and ended, as run history reports them
    end_time_utc: datetime | None = None
    log_files: dict[str, str] = field(default_factory=dict)  # name → read URL, as run history lists them


@dataclass
class StandInState:
    jobs: dict[str, Any] = field(default_factory=dict)  # name → submitted Job entity
    statuses: dict[str, str] = field(default_factory=dict)
    errors: dict[str, tuple[str, str]] = field(default_factory=dict)
    warnings: dict[str, str] = field(default_factory=dict)  # name → a queued job's warning
    refusal: tuple[str, str | None, str] | None = None  # new jobs stay at (status, error code, message)
    environments: dict[str, dict[str, Environment]] = field(default_factory=lambda: defaultdict(dict))
    computes: set[str] = field(default_factory=set)
    datastores: set[str] = field(default_factory=set)
    failures: dict[str, deque[BaseException]] = field(default_factory=lambda: defaultdict(deque))
    calls: list[tuple[str, str]] = field(default_factory=list)
    hooks: dict[str, Callable[[str], None]] = field(default_factory=dict)
    times: dict[str, list[datetime | None]] = field(default_factory=dict)  # name → [started, ended]
    shapes: dict[str, tuple[str, str, str | None]] = field(default_factory=dict)  # compute → size, tier, region
    publish: Callable[[str], None] | None = None  # where run events go (an Event Grid subscription's queue)
    log_urls: dict[str, dict[str, str]] = field(default_factory=dict)  # name → its log files' read URLs
    on_create: Callable[[str, Any], None] | None = None  # given each new job: a compute that runs it (aml_compute)

    def enter(self, operation: str, name: str) -> None:
        self.calls.append((operation, name))
        hook = self.hooks.pop(operation, None)
        if hook is not None:
            hook(name)
        queued = self.failures.get(operation)
        if queued:
            raise queued.popleft()


class _Runs:
    def __init__(self, state: StandInState) -> None:
        self._state = state

    def get_run_details(self, run_id: str) -> _RunDetails:
        self._state.enter("runs.get_run_details", run_id)
        error = self._state.errors.get(run_id)
        warning = self._state.warnings.get(run_id)
        started, ended = self._state.times.get(run_id, [None, None])
        return _RunDetails(
            error=_RunDetails(error=_RootError(*error)) if error else None,
            warnings=[_Warning("Scheduler", warning)] if warning else [],
            start_time_utc=started,
            end_time_utc=ended,
            log_files=dict(self._state.log_urls.get(run_id, {})),
        )


class StandInJobs:
    def __init__(self, state: StandInState) -> None:
        self._state = state
        self._runs_operations = _Runs(state)  # where the real client keeps run history (error details)

    def create_or_update(self, job: Any, **kwargs: Any) -> Job:
        name = str(job.name)
        self._state.enter("jobs.create_or_update", name)
        entity = job._to_job() if hasattr(job, "_to_job") else job  # what MLClient does with a Command node
        new = name not in self._state.jobs
        self._state.jobs[name] = entity
        self._state.statuses.setdefault(name, "NotStarted")
        if self._state.refusal is not None and self._state.statuses[name] == "NotStarted":
            status, code, message = self._state.refusal
            self._state.statuses[name] = status
            if code:
                self._state.errors[name] = (code, message)
            else:
                self._state.warnings[name] = message
        answer = self._entity(name)
        if new and self._state.on_create is not None and self._state.refusal is None:
            self._state.on_create(name, entity)
        return answer

    def get(self, name: str) -> Job:
        self._state.enter("jobs.get", name)
        if name not in self._state.jobs:
            raise http_error(404, "UserError", f"Job {name} not found")
        return self._entity(name)

    def begin_cancel(self, name: str, **kwargs: Any) -> LROPoller[None]:
        self._state.enter("jobs.begin_cancel", name)
        if name not in self._state.jobs:
            raise http_error(404, "UserError", f"Job {name} not found")
        if self._state.statuses[name] not in ("Completed", "Failed", "Canceled"):
            self._state.statuses[name] = "CancelRequested"
        return LROPoller(None, None, lambda *args: None, NoPolling())  # type: ignore[no-untyped-call]

    def list(self, **kwargs: Any) -> list[Job]:
        """Every job in the workspace (the real ``jobs.list`` default leaves out only archived ones)."""
        self._state.enter("jobs.list", "")
        return [self._entity(name) for name in self._state.jobs]

    def _entity(self, name: str) -> Job:
        rest = to_rest_job_object(self._state.jobs[name])
        rest.properties.status = self._state.statuses[name]
        return Job._from_rest_object(rest)


class StandInEnvironments:
    def __init__(self, state: StandInState) -> None:
        self._state = state

    def get(self, name: str, version: str | None = None, label: str | None = None) -> Environment:
        self._state.enter("environments.get", f"{name}:{version}" if version else f"{name}@{label}")
        versions = self._state.environments.get(name, {})
        if label is not None:
            if label != "latest" or not versions:
                raise label_not_found(name, label)
            return versions[max(versions, key=lambda v: (len(v), v))]
        if version not in versions:
            raise http_error(404, "UserError", f"Environment {name}:{version} not found")
        return versions[version]

    def create_or_update(self, environment: Environment) -> Environment:
        name, version = str(environment.name), str(environment.version)
        self._state.enter("environments.create_or_update", f"{name}:{version}")
        stored = Environment(
            name=name, version=version, image=environment.image, build=environment.build, tags=environment.tags
        )
        self._state.environments[name][version] = stored
        return stored


class StandInCompute:
    def __init__(self, state: StandInState) -> None:
        self._state = state

    def get(self, name: str) -> Compute:
        from azure.ai.ml.entities import AmlCompute  # noqa: TID251

        self._state.enter("compute.get", name)
        if name not in self._state.computes:
            raise http_error(404, "ResourceNotFound", f"Compute {name} not found")
        size, tier, region = self._state.shapes.get(name, ("STANDARD_DS3_V2", "dedicated", None))
        return AmlCompute(name=name, size=size, tier=tier, location=region, min_instances=0, max_instances=2)


class StandInDatastores:
    def __init__(self, state: StandInState) -> None:
        self._state = state

    def get(self, name: str, **kwargs: Any) -> Datastore:
        self._state.enter("datastores.get", name)
        if name not in self._state.datastores:
            raise http_error(404, "UserError", f"Datastore {name} not found")
        return AzureBlobDatastore(name=name, account_name="sthaste", container_name=name.replace("_", "-"))


class StandInWorkspaces:
    def __init__(self, state: StandInState, workspace: str) -> None:
        self._state = state
        self._workspace = workspace

    def get(self, name: str | None = None, **kwargs: Any) -> Workspace:
        self._state.enter("workspaces.get", name or self._workspace)
        if (name or self._workspace) != self._workspace:
            raise http_error(404, "ResourceNotFound", f"Workspace {name} not found")
        return Workspace(name=self._workspace)


class StandInMLClient:
    """``MLClient``'s ``jobs``, ``environments``, ``compute`` and ``workspaces``, in memory."""

    def __init__(
        self,
        *,
        workspace: str = "ws",
        computes: tuple[str, ...] = ("haste-cpu", "haste-gpu"),
        datastores: tuple[str, ...] = ("haste_inputs", "haste_outputs"),
    ) -> None:
        self.state = StandInState(computes=set(computes), datastores=set(datastores))
        self._datastores = StandInDatastores(self.state)
        self._jobs = StandInJobs(self.state)
        self._environments = StandInEnvironments(self.state)
        self._compute = StandInCompute(self.state)
        self._workspaces = StandInWorkspaces(self.state, workspace)
        self._workspace = workspace

    @property
    def jobs(self) -> StandInJobs:
        return self._jobs

    @property
    def environments(self) -> StandInEnvironments:
        return self._environments

    @property
    def compute(self) -> StandInCompute:
        return self._compute

    @property
    def workspaces(self) -> StandInWorkspaces:
        return self._workspaces

    @property
    def datastores(self) -> StandInDatastores:
        return self._datastores

    # -- scripting ---------------------------------------------------------------------

    @property
    def calls(self) -> list[tuple[str, str]]:
        return self.state.calls

    def count(self, operation: str) -> int:
        return sum(1 for op, _ in self.state.calls if op == operation)

    def fail(self, operation: str, *errors: BaseException) -> None:
        """The next ``len(errors)`` calls of ``operation`` (e.g. ``"jobs.get"``) raise these, in order."""
        self.state.failures[operation].extend(errors)

    def before_next(self, operation: str, action: Callable[[str], None]) -> None:
        """Run ``action(name)`` once, at the start of the next ``operation`` call (it may raise)."""
        self.state.hooks[operation] = action

    def set_status(self, name: str, status: str, *, error: tuple[str, str] | None = None) -> None:
        """Move job ``name`` to ``status``; ``error`` is the (code, message) run history reports."""
        self.state.statuses[name] = status
        if error is not None:
            self.state.errors[name] = error
        times = self.state.times.setdefault(name, [None, None])
        now = datetime.now(UTC)
        if status in ("Running", "Completed", "Failed") and times[0] is None:
            times[0] = now
        if status in ("Completed", "Failed", "Canceled") and times[0] is not None and times[1] is None:
            times[1] = now
        if self.state.publish is not None and name in self.state.jobs:
            job = self.state.jobs[name]
            event = run_status_event(
                name,
                status,
                dict(job.tags or {}),
                experiment=str(job.experiment_name or "haste"),
                workspace_id=f"/subscriptions/0/resourceGroups/rg/providers/Microsoft.MachineLearningServices/workspaces/{self._workspace}",
            )
            self.state.publish(json.dumps(event))

    def publish_events(self, send: Callable[[str], None] | None) -> None:
        """Publish each status change of a submitted job as Azure ML's ``RunStatusChanged`` event, by ``send``
        (the text Event Grid writes to a storage queue; None: publish none, the default)."""
        self.state.publish = send

    def write_log(self, name: str, data: bytes, container: Any, log: str = STREAM_LOG) -> None:
        """Append ``data`` to job ``name``'s log ``log``, kept as an append blob in ``container`` (a
        ``ContainerClient`` with an account key) and listed in its run details with a read-only SAS URL,
        as run history lists a running job's logs."""
        from azure.storage.blob import BlobSasPermissions, generate_blob_sas

        blob = container.get_blob_client(f"ExperimentRun/dcid.{name}/{log}")
        if name not in self.state.log_urls or log not in self.state.log_urls[name]:
            blob.create_append_blob()
            sas = generate_blob_sas(
                blob.account_name,
                blob.container_name,
                blob.blob_name,
                account_key=container.credential.account_key,
                permission=BlobSasPermissions(read=True),
                expiry=datetime.now(UTC) + timedelta(hours=1),
            )
            self.state.log_urls.setdefault(name, {})[log] = f"{blob.url}?{sas}"
        if data:
            blob.append_block(data)

    def shape_compute(self, name: str, *, size: str, tier: str = "dedicated", region: str | None = None) -> None:
        """What cluster ``name`` reports it is: its VM size, tier (dedicated, low_priority) and region."""
        self.state.shapes[name] = (size, tier, region)

    def refuse_capacity(self, code: str | None = None, message: str = "", *, status: str = "Queued") -> None:
        """Jobs created from now on stay ``status`` and say why in their run details: an error ``code``
        (``QuotaExceeded``: the cluster has no quota) or, without one, a warning (a long queue)."""
        self.state.refusal = (status, code, message or f"{code or 'Queued'} (scripted)")

    def grant_capacity(self) -> None:
        """Jobs created from now on are scheduled as usual (``set_status`` moves the waiting ones)."""
        self.state.refusal = None

    def add_environment(self, environment: Environment) -> None:
        self.state.environments[str(environment.name)][str(environment.version)] = environment

    def submitted(self, name: str) -> Any:
        """The job entity exactly as the backend submitted it (a ``CommandJob``)."""
        return self.state.jobs[name]
