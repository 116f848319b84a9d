"""Typed settings: the only place that reads environment variables.

Each field's alias is its environment variable, and its description is the
documentation (``docs/deploy.md`` and the drift check read them from here).
:func:`load_settings` validates everything at start-up and raises one
:class:`ConfigurationError` that names every bad variable, so a typo fails
the deployment at once instead of a job at 3 a.m.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from pydantic import Field, ValidationError, field_validator, model_validator

from hastegeo.auth import PROJECT_ID, AuthMode
from hastegeo.compute.azure_batch.settings import BatchSettings
from hastegeo.compute.azure_ml.settings import AmlSettings
from hastegeo.compute.contract import WORKLOADS
from hastegeo.compute.registry import backend_names, descriptors
from hastegeo.settings_base import CsvFloatMap, CsvList, CsvMap, _Section, describe_errors, load_section
from hastegeo.utils.errors import ConfigurationError


class StorageSettings(_Section):
    connection_string: str | None = Field(
        None,
        alias="AzureWebJobsStorage",
        description="Storage connection string (development and Azurite). Production uses identity instead.",
    )
    account_name: str | None = Field(
        None,
        alias="AzureWebJobsStorage__accountName",
        description="Storage account name for identity-based access (production).",
    )
    jobs_container: str = Field("haste-jobs", alias="HASTE_JOBS_CONTAINER", description="Container of job documents.")
    outputs_container: str = Field(
        "haste-outputs", alias="HASTE_OUTPUTS_CONTAINER", description="Container that receives job outputs and logs."
    )
    inputs_container: str = Field(
        "haste-inputs", alias="HASTE_INPUTS_CONTAINER", description="Container that clients' input blobs live in."
    )

    @model_validator(mode="after")
    def _one_way_in(self) -> StorageSettings:
        if not self.connection_string and not self.account_name:
            raise ValueError(
                "set AzureWebJobsStorage (a connection string) or AzureWebJobsStorage__accountName (identity)"
            )
        return self


class RoutingSettings(_Section):
    enabled_backends: CsvList = Field(
        ["local"],
        alias="HASTE_BACKENDS_ENABLED",
        description="Comma-separated backends jobs may run on: local, azure_batch, azure_ml.",
        # The embedded default runs workloads as local processes; a deployed app has no local
        # backend worth the name, so a deployment left at its defaults runs them on Azure Batch.
        json_schema_extra={"deploy_default": "azure_batch"},
    )
    default_backend: str = Field(
        "auto", alias="HASTE_DEFAULT_BACKEND", description="Backend used when a request names none: auto or a name."
    )
    weights: CsvFloatMap = Field(
        {}, alias="HASTE_BACKEND_WEIGHTS", description="auto routing weights, e.g. local=1,azure_batch=3 (default 1)."
    )

    @field_validator("enabled_backends")
    @classmethod
    def _known_backends(cls, value: list[str]) -> list[str]:
        unknown = sorted(set(value) - set(backend_names()))
        if unknown:
            raise ValueError(f"unknown backend(s) {unknown}; choose from {list(backend_names())}")
        return value

    @field_validator("default_backend")
    @classmethod
    def _known_default(cls, value: str) -> str:
        if value not in ("auto", *backend_names()):
            raise ValueError(f"{value!r} is not auto or one of {list(backend_names())}")
        return value

    @field_validator("weights")
    @classmethod
    def _positive_weights(cls, value: dict[str, float]) -> dict[str, float]:
        bad = {k: v for k, v in value.items() if k not in backend_names() or v <= 0}
        if bad:
            raise ValueError(f"weights must name known backends with positive values, got {bad}")
        return value


class PipelineSettings(_Section):
    poll_initial_s: float = Field(2.0, alias="HASTE_POLL_INITIAL_S", gt=0, description="First poll delay (s).")
    poll_max_s: float = Field(60.0, alias="HASTE_POLL_MAX_S", gt=0, description="Longest poll delay (s).")
    poll_backoff: float = Field(1.5, alias="HASTE_POLL_BACKOFF", ge=1, description="Poll delay growth factor.")
    queued_deadline_s: int = Field(
        3600, alias="HASTE_QUEUED_DEADLINE_S", gt=0, description="A job not submitted within this time fails."
    )
    run_deadline_s: int = Field(
        86400, alias="HASTE_RUN_DEADLINE_S", gt=0, description="A job not finished within this time fails."
    )
    history_limit: int = Field(
        200, alias="HASTE_HISTORY_LIMIT", ge=20, description="Status events kept per job (first and latest)."
    )
    max_body_bytes: int = Field(
        262144, alias="HASTE_MAX_BODY_BYTES", gt=0, description="Largest accepted request body (bytes)."
    )
    submit_rate_per_s: float = Field(
        0,
        alias="HASTE_SUBMIT_RATE_PER_S",
        ge=0,
        description="Submissions admitted per second per instance (0 = no limit).",
    )
    submit_burst: int = Field(
        200, alias="HASTE_SUBMIT_BURST", ge=1, description="Submissions admitted at once before the rate applies."
    )
    cors_allowed_origins: CsvList = Field(
        [], alias="HASTE_CORS_ALLOWED_ORIGINS", description="Origins allowed to call the API from a browser."
    )


class CapacitySettings(_Section):
    """How long a submitted job may wait for compute on each backend before it is moved on (compute/capacity.py)."""

    local_queue_limit_s: int = Field(
        3600,
        alias="HASTE_LOCAL_QUEUE_LIMIT_S",
        gt=0,
        description="A job waiting longer than this for a free local slot is moved on (s).",
    )
    azure_batch_queue_limit_s: int = Field(
        1800,
        alias="HASTE_AZURE_BATCH_QUEUE_LIMIT_S",
        gt=0,
        description="A job waiting longer than this for a Batch node is moved on (s; pool resizes time out at 15 min).",
    )
    azure_ml_queue_limit_s: int = Field(
        3600,
        alias="HASTE_AZURE_ML_QUEUE_LIMIT_S",
        gt=0,
        description="A job queued longer than this on its Azure ML compute is moved on (s).",
    )

    project_max_running: CsvMap = Field(
        {},
        alias="HASTE_PROJECT_MAX_RUNNING_PER_BACKEND",
        description="The most jobs one project may have running per backend, e.g. local=20,azure_batch=50 (unset: "
        "no limit); the jobs beyond wait, and projects take turns.",
    )
    # Admission before a provider (ADR 0028): held jobs wait in the admission book, projects in turn.
    project_max_running_total: int = Field(
        0,
        alias="HASTE_PROJECT_MAX_RUNNING",
        ge=0,
        description="The most jobs one project may have running on all backends together (0: no limit).",
    )
    backend_max_running: CsvMap = Field(
        {},
        alias="HASTE_BACKEND_MAX_RUNNING",
        description="The most jobs the pipeline gives a backend at once, e.g. azure_batch=40 (its pools' task "
        "slots; unset: no limit); the jobs beyond wait for a seat, projects in turn.",
    )

    @field_validator("project_max_running", "backend_max_running")
    @classmethod
    def _counts(cls, value: dict[str, str]) -> dict[str, str]:
        bad = {k: v for k, v in value.items() if not v.isdigit()}
        if bad:
            raise ValueError(f"limits must be whole numbers of jobs, got {bad}")
        return value

    def project_limit(self, backend: str) -> int:
        """The most running jobs one project may have on ``backend`` (0: no limit)."""
        return int(self.project_max_running.get(backend, "0"))

    def queue_limit_s(self, backend: str) -> int:
        """The queue-time limit of ``backend``; a backend from an entry point gets the local one's."""
        limits = {
            "local": self.local_queue_limit_s,
            "azure_batch": self.azure_batch_queue_limit_s,
            "azure_ml": self.azure_ml_queue_limit_s,
        }
        return limits.get(backend, self.local_queue_limit_s)


class LocalSettings(_Section):
    root: str = Field(
        "",
        alias="HASTE_LOCAL_ROOT",
        description="Directory for the local backend's job folders and state (default: a temp dir).",
    )
    slots: int = Field(0, alias="HASTE_LOCAL_SLOTS", ge=0, description="Concurrent local jobs (0 = CPU count).")
    python: str = Field("", alias="HASTE_LOCAL_PYTHON", description="Interpreter for workloads (default: this one).")
    niceness: int = Field(
        10,
        alias="HASTE_LOCAL_NICENESS",
        ge=0,
        le=19,
        description="The CPU nice value local workloads run at (0-19; 0 = the host's priority), their "
        "session's autogroup included: a busy machine still answers the API and runs the pipeline first.",
    )
    allow_in_azure: bool = Field(
        False,
        alias="HASTE_LOCAL_ALLOW_IN_AZURE",
        description="Let the local backend run workloads as processes on the Azure Functions instance itself "
        "(refused there by default: they would share the app's memory, CPU and identity).",
    )


class TelemetrySettings(_Section):
    export: str = Field(
        "off",
        alias="HASTE_OTEL_EXPORT",
        description="Where traces and metrics go: off, console, file:PATH (JSON lines, read by `haste trace`) "
        "or azure (Application Insights at APPLICATIONINSIGHTS_CONNECTION_STRING, with the app's identity).",
        json_schema_extra={"deploy_default": "azure"},
    )

    @field_validator("export")
    @classmethod
    def _known_export(cls, value: str) -> str:
        from hastegeo.telemetry.configure import parse_export

        parse_export(value)
        return value.strip()


class EventSettings(_Section):
    eventgrid_endpoint: str = Field(
        "",
        alias="HASTE_EVENTGRID_ENDPOINT",
        description=(
            "Event Grid custom topic endpoint (CloudEvents schema) that also receives the job events; "
            "empty: the jobs-events queue only. Set by infra when the topic is enabled."
        ),
    )

    @field_validator("eventgrid_endpoint")
    @classmethod
    def _https(cls, value: str) -> str:
        value = value.strip()
        if value and not value.startswith(("https://", "http://127.0.0.1", "http://localhost")):
            raise ValueError("must be the topic's https endpoint")
        return value


class HttpAuthLevel(enum.StrEnum):
    """Whether the Functions host asks HTTP callers for a function key (``HASTE_HTTP_AUTH_LEVEL``)."""

    ANONYMOUS = "anonymous"  # App Service authentication is the gate; a browser needs only its Entra token
    FUNCTION = "function"  # a function key as well, for service callers that hold one


class AuthSettings(_Section):
    http_auth_level: HttpAuthLevel = Field(
        HttpAuthLevel.ANONYMOUS,
        alias="HASTE_HTTP_AUTH_LEVEL",
        description="anonymous (App Service authentication alone admits callers) or function (a function key "
        "as well). /api/health, /api/openapi.json and the web console (/api/console) are always anonymous.",
    )
    mode: AuthMode = Field(
        AuthMode.APP_SERVICE,
        alias="HASTE_AUTH_MODE",
        description="Caller identity: app_service (trust X-MS-CLIENT-PRINCIPAL from App Service authentication) "
        "or none (every caller is an admin; isolated development only).",
    )
    project_groups: CsvMap = Field(
        {},
        alias="HASTE_PROJECT_GROUPS",
        description="Entra groups mapped to projects, groupObjectId=projectId separated by commas: "
        "members of a group belong to its project.",
    )

    client_id: str = Field(
        "",
        alias="HASTE_AUTH_CLIENT_ID",
        pattern=r"^([0-9a-fA-F-]{36})?$",
        description="Client id of the app registration App Service authentication validates tokens for; the web "
        "console signs in with it (empty: no sign-in, as in development, where the host supplies the caller).",
    )
    tenant_id: str = Field(
        "",
        alias="HASTE_AUTH_TENANT_ID",
        pattern=r"^([0-9a-zA-Z.-]{1,253})?$",
        description="Entra tenant of that app registration (a tenant id or domain), for the web console's sign-in.",
    )

    @field_validator("project_groups")
    @classmethod
    def _project_ids(cls, value: dict[str, str]) -> dict[str, str]:
        bad = sorted(project for project in value.values() if not PROJECT_ID.fullmatch(project))
        if bad:
            raise ValueError(f"not project ids: {bad} (lowercase letters, digits and '-')")
        return value


def in_azure_functions(env: Mapping[str, str]) -> bool:
    """Whether this process runs on the Azure Functions platform, from what the platform sets.

    ``WEBSITE_INSTANCE_ID`` is set by App Service on every instance of every
    plan that has one (Dedicated, Premium, Windows Consumption), and never by
    Core Tools or this project's dev host. Linux Consumption and Flex do not
    always set it, but they set ``WEBSITE_SITE_NAME``, which alone would also
    match any App Service web app, together with ``FUNCTIONS_WORKER_RUNTIME``,
    which alone is also set by ``local.settings.json`` on a workstation. The
    pair is specific to a deployed function app.
    """
    if env.get("WEBSITE_INSTANCE_ID"):
        return True
    return bool(env.get("WEBSITE_SITE_NAME")) and bool(env.get("FUNCTIONS_WORKER_RUNTIME"))


class Settings(_Section):
    storage: StorageSettings
    routing: RoutingSettings
    pipeline: PipelineSettings
    auth: AuthSettings
    local: LocalSettings
    capacity: CapacitySettings = Field(default_factory=lambda: CapacitySettings.model_validate({}))
    batch: BatchSettings
    aml: AmlSettings
    telemetry: TelemetrySettings = Field(default_factory=lambda: TelemetrySettings.model_validate({}))
    events: EventSettings = Field(default_factory=lambda: EventSettings.model_validate({}))
    # Set by load_settings from the platform's own variables (see in_azure_functions); not a setting.
    in_azure_functions: bool = False

    def backend_workloads(self, backend: str) -> frozenset[str]:
        """The workloads a backend can run with its current settings (no adapter is built)."""
        descriptor = descriptors().get(backend)
        return descriptor.workloads(self, WORKLOADS) if descriptor is not None else frozenset()

    def backend_limits(self, backend: str) -> dict[str, str]:
        """Workload → why ``backend`` cannot run it with its current settings; empty when it runs all.

        Pure: read from settings alone by the backend's descriptor, so routing and
        ``GET /api/backends`` agree with what the adapter would refuse, without building it.
        """
        descriptor = descriptors().get(backend)
        if descriptor is None:
            return dict.fromkeys(WORKLOADS, f"{backend!r} is not a backend")
        return descriptor.limits(self, WORKLOADS)

    def local_refusal(self) -> str | None:
        """Why the local backend must not start here, or None. The local adapter refuses with this."""
        if self.in_azure_functions and not self.local.allow_in_azure:
            return (
                "it would run workloads as processes on this Azure Functions instance; "
                "set HASTE_LOCAL_ALLOW_IN_AZURE=true to allow it"
            )
        return None

    @model_validator(mode="after")
    def _enabled_backends_configured(self) -> Settings:
        known = descriptors()
        problems = [known[name].enable_problem(self) for name in self.routing.enabled_backends if name in known]
        if any(problems):
            raise ValueError("; ".join(problem for problem in problems if problem))
        return self


SECTIONS: dict[str, type[_Section]] = {
    "storage": StorageSettings,
    "routing": RoutingSettings,
    "pipeline": PipelineSettings,
    "auth": AuthSettings,
    "local": LocalSettings,
    "capacity": CapacitySettings,
    "batch": BatchSettings,
    "aml": AmlSettings,
    "telemetry": TelemetrySettings,
    "events": EventSettings,
}


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Build and validate :class:`Settings` from ``environ`` (default: the process environment).

    Raises:
        ConfigurationError: listing every invalid variable by name with the reason.
    """
    env = os.environ if environ is None else environ
    problems: list[str] = []
    sections: dict[str, Any] = {}
    for key, model in SECTIONS.items():
        try:
            sections[key] = model.from_environ(env)
        except ValidationError as exc:
            problems.extend(describe_errors(exc))
    if problems:
        raise ConfigurationError("Invalid settings: " + "; ".join(problems))
    try:
        return Settings.model_validate({**sections, "in_azure_functions": in_azure_functions(env)})
    except ValidationError as exc:
        raise ConfigurationError("Invalid settings: " + "; ".join(describe_errors(exc))) from None


def http_auth_level(environ: Mapping[str, str] | None = None) -> HttpAuthLevel:
    """The HTTP auth level for ``function_app.py``, which needs it at import, before any request.

    Only this one field is read, so an unrelated bad setting cannot stop the functions from being
    indexed. An invalid value falls back to ``function`` (closed: keys required); the first request
    then fails with the message of :func:`load_settings`, which names the variable.
    """
    env = os.environ if environ is None else environ
    field = AuthSettings.model_fields["http_auth_level"]
    raw = env.get(field.alias or "", "").strip()
    if not raw:
        return HttpAuthLevel(field.default)
    try:
        return HttpAuthLevel(raw)
    except ValueError:
        return HttpAuthLevel.FUNCTION


def telemetry_settings(environ: Mapping[str, str] | None = None) -> TelemetrySettings:
    """Only the telemetry section, for tools that need no storage (``haste trace``).

    Raises:
        ConfigurationError: ``HASTE_OTEL_EXPORT`` is not a known export.
    """
    return load_section(TelemetrySettings, os.environ if environ is None else environ)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, loaded once (call ``get_settings.cache_clear()`` in tests)."""
    return load_settings()
