"""Typed settings: the app's own sections, and :class:`Settings`, which holds them and every backend's.

Each field's alias is its environment variable, and its description is the
documentation (``docs/deploy.md`` and the drift check read them from the
sections). A backend's section lives in its own folder and reaches
:class:`Settings` through its descriptor (:mod:`hastegeo.settings.load` composes
them), so this module imports nothing from ``hastegeo.compute``: it names no
backend and knows their names only as the keys of :attr:`Settings.backends`
(docs/adr/0029). :func:`compose_settings` validates everything at start-up and
raises one :class:`ConfigurationError` that names every bad variable, so a
typo fails the deployment at once instead of a job at 3 a.m.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Iterable, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import Field, ValidationError, field_validator, model_validator

from hastegeo.auth import PROJECT_ID, AuthMode
from hastegeo.checkpoints.layout import DEFAULT_INTERVAL_S, INTERVAL_VARIABLE, MIN_INTERVAL_S
from hastegeo.costs.prices import split_blob_location
from hastegeo.settings.fields import (
    BackendSection,
    CsvFloatMap,
    CsvList,
    CsvMap,
    Section,
    describe_errors,
    load_section,
)
from hastegeo.utils.errors import ConfigurationError

B = TypeVar("B", bound=BackendSection)


class StorageSettings(Section):
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


class RoutingSettings(Section):
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

    @field_validator("weights")
    @classmethod
    def _positive_weights(cls, value: dict[str, float]) -> dict[str, float]:
        bad = {k: v for k, v in value.items() if v <= 0}
        if bad:
            raise ValueError(f"weights must be positive, got {bad}")
        return value

    def unknown_backends(self, known: Iterable[str]) -> list[str]:
        """One ``VARIABLE: why`` per setting that names a backend not among ``known``."""
        names = list(known)
        problems = []
        unknown = sorted(set(self.enabled_backends) - set(names))
        if unknown:
            problems.append(f"HASTE_BACKENDS_ENABLED: unknown backend(s) {unknown}; choose from {names}")
        if self.default_backend not in ("auto", *names):
            problems.append(f"HASTE_DEFAULT_BACKEND: {self.default_backend!r} is not auto or one of {names}")
        strangers = sorted(set(self.weights) - set(names))
        if strangers:
            problems.append(f"HASTE_BACKEND_WEIGHTS: weights must name known backends, got {strangers}")
        return problems


class PipelineSettings(Section):
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
    checkpoint_interval_s: float = Field(
        DEFAULT_INTERVAL_S,
        alias=INTERVAL_VARIABLE,
        ge=MIN_INTERVAL_S,
        description="Seconds between the periodic copies of a running job's checkpoint folder to blob storage "
        "(workloads that keep checkpoints; every backend). Shorter loses less work to a preemption and costs "
        "more storage calls.",
    )


class CapacitySettings(Section):
    """What one project may hold on each backend; how long a job may wait for a backend's compute is that
    backend's own setting (:meth:`~hastegeo.settings.fields.BackendSection.queue_limit`)."""

    project_max_running: CsvMap = Field(
        {},
        alias="HASTE_PROJECT_MAX_RUNNING_PER_BACKEND",
        description="The most jobs one project may have running per backend, e.g. local=20,azure_batch=50 (unset: "
        "no limit); the jobs beyond wait, and projects take turns.",
    )
    # Admission before a provider (ADR 0032): held jobs wait in the admission book, projects in turn.
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


def parse_export(value: str) -> tuple[str, Path | None]:
    """``(mode, path)`` from a ``HASTE_OTEL_EXPORT`` value.

    Raises:
        ValueError: the value is none of ``off``, ``console``, ``azure``, ``file:PATH``.
    """
    value = value.strip()
    if value in ("", "off", "console", "azure"):
        return value or "off", None
    if value.startswith("file:") and value[5:].strip():
        return "file", Path(value[5:].strip())
    raise ValueError(f"{value!r}: choose off, console, azure or file:PATH")


class TelemetrySettings(Section):
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
        parse_export(value)
        return value.strip()


class EventSettings(Section):
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


class CostSettings(Section):
    """Where the prices of compute come from (docs/adr/0038)."""

    prices_blob: str = Field(
        "",
        alias="HASTE_PRICES_BLOB",
        description="The price table the app prices jobs with, as container/blob in the app's storage account "
        "(written by `haste prices refresh --blob`); empty: the dated table shipped with the app.",
    )
    local_price_per_slot_hour: Decimal = Field(
        Decimal(0),
        alias="HASTE_LOCAL_PRICE_PER_SLOT_HOUR",
        ge=0,
        description="What one slot-hour of the local backend costs, in the price table's currency "
        "(default 0: local jobs are reported as costing nothing, and say so).",
    )

    budget_action: Literal["off", "hold", "refuse"] = Field(
        "off",
        alias="HASTE_BUDGET_ACTION",
        description="What a project's monthly budget does once spent (with its running jobs' cost so far): hold "
        "(new jobs wait as queued, saying why), refuse (new jobs fail, saying why), or off (budgets are not read).",
    )
    project_budgets: CsvMap = Field(
        {},
        alias="HASTE_PROJECT_BUDGETS",
        description="Monthly budget per project in the price table's currency, e.g. p1=400,p2=1250.50; an admin "
        "can change one at run time (PUT /api/projects/{id}/budget).",
    )
    budget_warn_percent: int = Field(
        80,
        alias="HASTE_BUDGET_WARN_PERCENT",
        ge=1,
        le=99,
        description="Share of a budget at which the com.haste.project.budget warning is sent (once a month).",
    )

    @field_validator("project_budgets")
    @classmethod
    def _amounts(cls, value: dict[str, str]) -> dict[str, str]:
        for project, amount in value.items():
            try:
                if Decimal(amount) < 0 or not Decimal(amount).is_finite():
                    raise ValueError
            except (ArithmeticError, ValueError):
                raise ValueError(f"{project}: {amount!r} is not an amount (e.g. 400 or 1250.50)") from None
        return value

    @field_validator("prices_blob")
    @classmethod
    def _container_and_name(cls, value: str) -> str:
        value = value.strip()
        if value:
            split_blob_location(value)
        return value


class HttpAuthLevel(enum.StrEnum):
    """Whether the Functions host asks HTTP callers for a function key (``HASTE_HTTP_AUTH_LEVEL``)."""

    ANONYMOUS = "anonymous"  # App Service authentication is the gate; a browser needs only its Entra token
    FUNCTION = "function"  # a function key as well, for service callers that hold one


class AuthSettings(Section):
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


class Settings(Section):
    """Every section: the app's own, and each known backend's by its name (from its descriptor)."""

    storage: StorageSettings
    routing: RoutingSettings
    pipeline: PipelineSettings
    auth: AuthSettings
    capacity: CapacitySettings = Field(default_factory=lambda: CapacitySettings.model_validate({}))
    telemetry: TelemetrySettings = Field(default_factory=lambda: TelemetrySettings.model_validate({}))
    events: EventSettings = Field(default_factory=lambda: EventSettings.model_validate({}))
    costs: CostSettings = Field(default_factory=lambda: CostSettings.model_validate({}))
    backends: Mapping[str, BackendSection] = Field(default_factory=dict)

    def backend(self, name: str) -> BackendSection:
        """The section of backend ``name``.

        Raises:
            ConfigurationError: no backend of that name is known.
        """
        try:
            return self.backends[name]
        except KeyError:
            raise ConfigurationError(f"{name!r} is not a backend; choose from {list(self.backends)}") from None

    def section(self, model: type[B]) -> B:
        """The one backend section of type ``model`` (e.g. ``settings.section(BatchSettings)``).

        Raises:
            ConfigurationError: no known backend, or more than one, reads ``model``.
        """
        found = [section for section in self.backends.values() if type(section) is model]
        if len(found) != 1:
            raise ConfigurationError(f"{len(found)} backends read {model.__name__}; expected one")
        return found[0]

    def poll_max_s(self, backend: str) -> float:
        """The longest delay between two polls of a job on ``backend`` (s): its own setting, else HASTE_POLL_MAX_S."""
        section = self.backends.get(backend)
        longest = section.poll_max() if section is not None else None
        return self.pipeline.poll_max_s if longest is None else longest

    def queue_limit_s(self, backend: str) -> int:
        """How long a job may wait for ``backend``'s compute before it is moved on (s)."""
        return self.backend(backend).queue_limit()

    @model_validator(mode="after")
    def _backends_known_and_configured(self) -> Settings:
        problems = self.routing.unknown_backends(self.backends)
        for name in self.routing.enabled_backends:
            problem = self.backends[name].enable_problem() if name in self.backends else None
            if problem:
                problems.append(f"{name} is enabled (HASTE_BACKENDS_ENABLED) but {problem}")
        if problems:
            raise ValueError("; ".join(problems))
        return self


# The app's own sections by their name in Settings, read from its fields; each backend's comes from its descriptor.
CORE_SECTIONS: dict[str, type[Section]] = {
    name: field.annotation
    for name, field in Settings.model_fields.items()
    if isinstance(field.annotation, type) and issubclass(field.annotation, Section)
}


def compose_settings(environ: Mapping[str, str], backends: Mapping[str, type[BackendSection]]) -> Settings:
    """Build and validate :class:`Settings` from ``environ``: the core sections and one section per backend.

    ``backends``: backend name → its section model (:func:`hastegeo.settings.load.load_settings` passes every
    registered descriptor's).

    Raises:
        ConfigurationError: listing every invalid variable by name with the reason.
    """
    problems: list[str] = []
    sections: dict[str, Any] = {}
    for key, model in CORE_SECTIONS.items():
        try:
            sections[key] = model.from_environ(environ)
        except ValidationError as exc:
            problems.extend(describe_errors(exc))
    own: dict[str, BackendSection] = {}
    for name, backend_model in backends.items():
        try:
            own[name] = backend_model.from_environ(environ)
        except ValidationError as exc:
            problems.extend(describe_errors(exc))
    if problems:
        raise ConfigurationError("Invalid settings: " + "; ".join(problems))
    try:
        return Settings.model_validate({**sections, "backends": own})
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
