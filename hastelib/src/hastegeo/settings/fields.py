"""Building blocks for settings sections: comma-separated lists and maps from one variable, and loading.

The bottom floor of settings: :mod:`hastegeo.settings.app` (the app's own sections)
and every backend's folder (its own section, named by its descriptor) build on
this module and on nothing of each other's. A backend's section
(:class:`BackendSection`) also says what the backend cannot do with these
settings and how long a job may wait for its compute, so no adapter, router or
capacity check writes that twice (docs/adr/0029).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, Self, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from hastegeo.profiles import Profile, ProfileDeclaration, offered
from hastegeo.utils.errors import ConfigurationError


def _split_list(value: Any) -> Any:
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    return value


def _split_map(value: Any) -> Any:
    """``"a=1, b=2"`` → ``{"a": "1", "b": "2"}``; a dict passes through."""
    if isinstance(value, str):
        pairs = [item.strip() for item in value.split(",") if item.strip()]
        result: dict[str, str] = {}
        for pair in pairs:
            key, sep, val = pair.partition("=")
            if not sep or not key.strip():
                raise ValueError(f"expected key=value pairs separated by commas, got {pair!r}")
            result[key.strip()] = val.strip()
        return result
    return value


CsvList = Annotated[list[str], BeforeValidator(_split_list)]
CsvFloatMap = Annotated[dict[str, float], BeforeValidator(_split_map)]
CsvMap = Annotated[dict[str, str], BeforeValidator(_split_map)]


class Section(BaseModel):
    """A group of settings; each field's alias is its environment variable."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True, frozen=True)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Self:
        """The section from ``environ``; an empty variable means its default, as an unset one does.

        Raises:
            ValidationError: a variable is invalid (see :func:`describe_errors`).
        """
        fields = cls.model_fields.values()
        return cls.model_validate({f.alias: environ[f.alias] for f in fields if f.alias and environ.get(f.alias)})

    def empty(self, *fields: str) -> list[str]:
        """The variables of the named fields that are empty, in the order given."""
        return [type(self).model_fields[name].alias or name for name in fields if not getattr(self, name)]


# How long a job may wait for compute on a backend whose section declares no limit of its own (s).
DEFAULT_QUEUE_LIMIT_S = 3600


def poll_max_field(alias: str, default: int, backend: str) -> Any:
    """The setting ``alias``: the longest delay between two polls of a job on ``backend`` (s; ADR 0041)."""
    return Field(
        default,
        alias=alias,
        gt=0,
        description=f"Longest delay between two polls of a job on {backend}; its end is seen within it (s).",
    )


def queue_limit_field(alias: str, default: int, waiting_for: str) -> Any:
    """The setting ``alias``: how long a job may wait for ``waiting_for`` before it is moved on (s)."""
    return Field(
        default, alias=alias, gt=0, description=f"A job waiting longer than this for {waiting_for} is moved on (s)."
    )


class BackendSection(Section):
    """The settings of one backend, which also say what that backend cannot do with them.

    The base has no fields: a backend without settings of its own names this class
    in its descriptor. Subclasses add fields (each alias an environment variable)
    and override the answers below.
    """

    def limits(self, workloads: Iterable[str]) -> dict[str, str]:
        """Workload → why the backend cannot run it with these settings (what its ``submit`` would refuse)."""
        return {}

    def workloads(self, workloads: Iterable[str]) -> frozenset[str]:
        """Those of ``workloads`` the backend can run with these settings."""
        wanted = frozenset(workloads)
        return wanted - frozenset(self.limits(wanted))

    def enable_problem(self) -> str | None:
        """Why the backend must not be enabled at all with these settings (checked at start-up), or None."""
        return None

    def queue_limit(self) -> int:
        """How long a job may wait for this backend's compute before it is moved on (s)."""
        return DEFAULT_QUEUE_LIMIT_S

    def poll_max(self) -> float | None:
        """The longest delay between two polls of this backend's jobs (s); None: ``HASTE_POLL_MAX_S``."""
        return None

    def declared_profiles(self) -> Mapping[str, ProfileDeclaration]:
        """The compute profiles the operator declared for this backend (ADR 0043); none by default."""
        return {}

    def default_runs_on(self) -> str:
        """What the implicit ``default`` profile runs on, in one line."""
        return "the workload's own compute"

    def profiles(self, workloads: Iterable[str]) -> dict[str, Profile]:
        """Every profile this backend offers with these settings: ``default``, then those declared."""
        return offered(self.declared_profiles(), self.workloads(workloads), self.default_runs_on())


S = TypeVar("S", bound=Section)


def workload_limits(
    workloads: Iterable[str], whole: str | None, tables: Sequence[tuple[Mapping[str, str], str]]
) -> dict[str, str]:
    """Workload → ``whole`` when set, else the reason of the first (table, reason) whose table names nothing for it."""
    limits: dict[str, str] = {}
    for workload in workloads:
        reason = whole or next((why for table, why in tables if not table.get(workload)), None)
        if reason:
            limits[workload] = reason
    return limits


def load_section(model: type[S], environ: Mapping[str, str], title: str = "Invalid settings") -> S:
    """One section from ``environ`` (for a tool that needs no other settings).

    Raises:
        ConfigurationError: ``title`` and every invalid variable by name with the reason.
    """
    try:
        return model.from_environ(environ)
    except ValidationError as exc:
        raise ConfigurationError(f"{title}: " + "; ".join(describe_errors(exc))) from None


def describe_errors(exc: ValidationError) -> list[str]:
    """One ``where: why`` line per error of a settings model (``where``: the variable or section)."""
    lines = []
    for error in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(part) for part in error["loc"] if part != "__root__")
        message = error["msg"].removeprefix("Value error, ")
        lines.append(f"{where}: {message}" if where else message)
    return lines
