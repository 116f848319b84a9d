"""Settings of the local backend (environment variables HASTE_LOCAL_*), the only place they are declared."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Self

from pydantic import BeforeValidator, Field, field_validator

from hastegeo.profiles import ProfileDeclaration, Tier, parse_profiles, profiles_field
from hastegeo.settings.fields import BackendSection, queue_limit_field


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


class LocalProfile(ProfileDeclaration):
    """A local profile: a time limit and the workloads that may use it; it runs as a local process."""

    @field_validator("tier")
    @classmethod
    def _dedicated(cls, value: Tier) -> Tier:
        if value is not Tier.DEDICATED:
            raise ValueError("the local backend has no spot capacity: its profiles are dedicated")
        return value

    def runs_on(self) -> str:
        return "a local process"


class LocalSettings(BackendSection):
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
    queue_limit_s: int = queue_limit_field("HASTE_LOCAL_QUEUE_LIMIT_S", 3600, "a free local slot")
    compute_profiles: Annotated[dict[str, LocalProfile], BeforeValidator(parse_profiles)] = profiles_field(
        "HASTE_LOCAL_PROFILES", '{"cpu-small": {"maxRunS": 1800, "workloads": ["imagery", "embedding"]}}'
    )
    # Read from the platform's own variables (see in_azure_functions) by from_environ; not a setting.
    in_azure_functions: bool = False

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Self:
        return super().from_environ(environ).model_copy(update={"in_azure_functions": in_azure_functions(environ)})

    def refusal(self) -> str | None:
        """Why the local backend must not start here, or None. The local adapter refuses with this."""
        if self.in_azure_functions and not self.allow_in_azure:
            return (
                "it would run workloads as processes on this Azure Functions instance; "
                "set HASTE_LOCAL_ALLOW_IN_AZURE=true to allow it"
            )
        return None

    def limits(self, workloads: Iterable[str]) -> dict[str, str]:
        refusal = self.refusal()
        return dict.fromkeys(workloads, refusal) if refusal else {}

    def queue_limit(self) -> int:
        return self.queue_limit_s

    def declared_profiles(self) -> Mapping[str, LocalProfile]:
        return self.compute_profiles

    def default_runs_on(self) -> str:
        return "a local process"
