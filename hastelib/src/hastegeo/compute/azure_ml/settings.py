"""Settings of the Azure ML backend (AML_*, and HASTE_AZURE_ML_QUEUE_LIMIT_S), the only place they are declared.

Enabling the backend needs only ``AML_MODE`` (``Existing`` or ``Create``) and the
workspace coordinates (``AML_SUBSCRIPTION_ID``, ``AML_RESOURCE_GROUP``,
``AML_WORKSPACE``). Everything the backend needs to run has a non-empty default
even while it is ``Disabled``, so flipping ``AML_MODE`` alone never meets an
empty identity mode or compute map. The optional selectors (``AML_IMAGE``,
``AML_BUILD_CONTEXT``, ``AML_CODE_DIR``, ``AML_MANAGED_IDENTITY_CLIENT_ID``,
``AML_PROFILES``) are empty by default, which means "not used" and is documented on each field.

Environments come three ways, chosen by ``AML_ENVIRONMENT_SOURCE``:

- ``image`` (default): an anonymous Environment from ``AML_IMAGE``, else the
  image the job spec names. Reproducible: the image is the whole runtime.
- ``registered``: the registered Environment ``AML_ENVIRONMENT``
  (``name:version`` or ``name@label``; curated or our own). When it is missing,
  the adapter creates it once from ``AML_BUILD_CONTEXT`` or ``AML_IMAGE``.
- ``build_context``: an anonymous Environment built by Azure ML from the
  Docker build context ``AML_BUILD_CONTEXT`` (``AML_DOCKERFILE`` inside it).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, model_validator

from hastegeo.profiles import DEFAULT_PROFILE, ProfileDeclaration, Tier, parse_profiles, profiles_field
from hastegeo.settings.fields import (
    BackendSection,
    CsvMap,
    load_section,
    poll_max_field,
    queue_limit_field,
    workload_limits,
)
from hastegeo.workloads.registry import workload_names


class AmlMode(enum.StrEnum):
    EXISTING = "Existing"
    CREATE = "Create"
    DISABLED = "Disabled"


class EnvironmentSource(enum.StrEnum):
    IMAGE = "image"
    REGISTERED = "registered"
    BUILD_CONTEXT = "build_context"


# Default compute cluster per workload (training on GPU); Create mode provisions clusters with these names.
DEFAULT_COMPUTE: dict[str, str] = {
    name: "haste-gpu" if name == "training" else "haste-cpu" for name in workload_names()
}

# name:version, or name@label (Azure ML asset names: letters, digits, '-', '_', '.').
_ENV_REFERENCE = re.compile(
    r"(?P<name>[A-Za-z0-9][A-Za-z0-9_.-]{0,254})(?::(?P<version>[A-Za-z0-9_.-]+)|@(?P<label>[A-Za-z0-9_.-]+))"
)
_DATASTORE = re.compile(r"[A-Za-z0-9_]{1,255}")


def parse_environment_reference(reference: str) -> tuple[str, str | None, str | None]:
    """``name:version`` → ``(name, version, None)``; ``name@label`` → ``(name, None, label)``.

    Raises:
        ValueError: the reference has neither a version nor a label (a bare name
            fails client-side in azure-ai-ml, so it is refused here first).
    """
    reference = reference.removeprefix("azureml:")
    match = _ENV_REFERENCE.fullmatch(reference)
    if not match:
        raise ValueError(f"AML_ENVIRONMENT must be name:version or name@label, got {reference!r}")
    return match.group("name"), match.group("version"), match.group("label")


class AmlProfile(ProfileDeclaration):
    """An Azure ML profile runs on one compute, with an instance type and count (a spot one in the spot tier)."""

    compute: str = Field(
        pattern=r"^[A-Za-z][A-Za-z0-9-]{1,31}$", description="The compute cluster (or serverless) name its jobs use."
    )
    instance_type: str = Field(
        "", max_length=64, description="VM size of each instance, e.g. Standard_NC4as_T4_v3 (empty: the compute's)."
    )
    instance_count: int = Field(1, ge=1, le=100, description="How many instances the job takes.")

    def runs_on(self) -> str:
        shape = f" ({self.instance_type} x {self.instance_count})" if self.instance_type else ""
        return f"compute {self.compute}{shape}"


@dataclass(frozen=True)
class AmlPlacement:
    """Where an Azure ML job runs: its compute, instance type and count (None: the compute's own), and tier."""

    compute: str
    instance_type: str | None = None
    instance_count: int | None = None
    tier: Tier = Tier.DEDICATED


class AmlSettings(BackendSection):
    mode: AmlMode = Field(
        AmlMode.DISABLED, alias="AML_MODE", description="Existing, Create or Disabled (default Disabled)."
    )
    subscription_id: str = Field("", alias="AML_SUBSCRIPTION_ID", description="Subscription of the workspace.")
    resource_group: str = Field("", alias="AML_RESOURCE_GROUP", description="Resource group of the workspace.")
    workspace: str = Field("", alias="AML_WORKSPACE", description="Workspace name.")
    identity_mode: Literal["managed_identity", "default"] = Field(
        "managed_identity",
        alias="AML_IDENTITY_MODE",
        description="managed_identity (production) or default (DefaultAzureCredential: CLI login, env vars).",
    )
    managed_identity_client_id: str = Field(
        "",
        alias="AML_MANAGED_IDENTITY_CLIENT_ID",
        description="Client id of a user-assigned identity (managed_identity mode); empty = system-assigned.",
    )
    region: str = Field(
        "",
        alias="AML_REGION",
        description="The region (armRegionName) a cluster is priced in when it does not report its location.",
    )
    compute: CsvMap = Field(
        DEFAULT_COMPUTE,
        alias="AML_COMPUTE",
        description="Compute cluster per workload, e.g. imagery=haste-cpu,training=haste-gpu. "
        "Workloads not listed are not routed to Azure ML.",
    )
    environment_source: EnvironmentSource = Field(
        EnvironmentSource.IMAGE,
        alias="AML_ENVIRONMENT_SOURCE",
        description="image (default), registered or build_context: where the job's Environment comes from.",
    )
    environment: str = Field(
        "haste-runtime@latest",
        alias="AML_ENVIRONMENT",
        description="Registered Environment, name:version or name@label (registered source; created when missing).",
    )
    image: str = Field(
        "",
        alias="AML_IMAGE",
        description="Container image for the Environment; empty = the image named by each job spec.",
    )
    build_context: str = Field(
        "",
        alias="AML_BUILD_CONTEXT",
        description="Local Docker build context directory (build_context source, or to create a registered one).",
    )
    dockerfile: str = Field(
        "Dockerfile", alias="AML_DOCKERFILE", description="Dockerfile path relative to AML_BUILD_CONTEXT."
    )
    code_dir: str = Field(
        "",
        alias="AML_CODE_DIR",
        description="Directory uploaded as the job's code snapshot (honours .amlignore); empty = code from the image.",
    )
    datastores: CsvMap = Field(
        {},
        alias="AML_DATASTORES",
        description="Datastore per blob container, e.g. haste-outputs=haste_outputs; a container not listed maps "
        "to its name with '-' replaced by '_'.",
    )
    experiment: str = Field(
        "haste", alias="AML_EXPERIMENT", description="Experiment name prefix; the project (or workload) is appended."
    )
    retry_attempts: int = Field(
        3, alias="AML_RETRY_ATTEMPTS", ge=1, le=10, description="Attempts per call on a transient error (one budget)."
    )
    retry_delay_s: float = Field(
        1.0, alias="AML_RETRY_DELAY_S", ge=0, description="First delay between attempts (s); doubles each time."
    )
    queue_limit_s: int = queue_limit_field("HASTE_AZURE_ML_QUEUE_LIMIT_S", 3600, "its Azure ML compute")
    poll_max_s: int = poll_max_field("AML_POLL_MAX_S", 600, "Azure ML")
    compute_profiles: Annotated[dict[str, AmlProfile], BeforeValidator(parse_profiles)] = profiles_field(
        "AML_PROFILES",
        '{"gpu-t4-spot": {"compute": "haste-gpu", "instanceType": "Standard_NC4as_T4_v3", "instanceCount": 1, '
        '"tier": "spot", "maxRunS": 14400, "workloads": ["training"]}}',
    )

    @model_validator(mode="after")
    def _coordinates(self) -> AmlSettings:
        if self.mode is AmlMode.DISABLED:
            return self
        coordinates = self.empty("subscription_id", "resource_group", "workspace")
        problems = [f"AML_MODE={self.mode.value} needs {alias}" for alias in coordinates]
        try:
            parse_environment_reference(self.environment)
        except ValueError as exc:
            problems.append(str(exc))
        if self.environment_source is EnvironmentSource.BUILD_CONTEXT and not self.build_context:
            problems.append("AML_ENVIRONMENT_SOURCE=build_context needs AML_BUILD_CONTEXT")
        bad = sorted(f"{c}={d}" for c, d in self.datastores.items() if not _DATASTORE.fullmatch(d))
        if bad:
            problems.append(f"AML_DATASTORES names must be letters, digits and '_': {bad}")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @property
    def enabled(self) -> bool:
        return self.mode is not AmlMode.DISABLED

    def enable_problem(self) -> str | None:
        return None if self.enabled else "AML_MODE is Disabled"

    def queue_limit(self) -> int:
        return self.queue_limit_s

    def poll_max(self) -> float:
        return float(self.poll_max_s)

    def limits(self, workloads: Iterable[str]) -> dict[str, str]:
        """An Environment must come from somewhere: ``AML_IMAGE`` (image source; job specs name no image),
        a registered ``AML_ENVIRONMENT`` (registered source), or ``AML_BUILD_CONTEXT`` (build_context source).
        """
        whole: str | None = None
        if not self.enabled:
            whole = "AML_MODE is Disabled"
        elif self.environment_source is EnvironmentSource.IMAGE and not self.image:
            whole = (
                "no environment to run in: AML_IMAGE is empty (or set AML_ENVIRONMENT_SOURCE=registered with "
                "AML_ENVIRONMENT, or build_context with AML_BUILD_CONTEXT)"
            )
        elif self.environment_source is EnvironmentSource.BUILD_CONTEXT and not self.build_context:
            whole = "AML_ENVIRONMENT_SOURCE=build_context needs AML_BUILD_CONTEXT"
        return workload_limits(workloads, whole, [(self.compute, "AML_COMPUTE names no compute target for it")])

    def declared_profiles(self) -> Mapping[str, AmlProfile]:
        return self.compute_profiles

    def default_runs_on(self) -> str:
        return "the workload's compute (AML_COMPUTE)"

    def placement(self, workload: str, profile: str | None) -> AmlPlacement:
        """Where a job of ``workload`` runs under ``profile`` (None: ``default``); an empty compute when the
        settings name none."""
        if profile is None or profile == DEFAULT_PROFILE:
            return AmlPlacement(self.compute.get(workload, ""))
        declared = self.compute_profiles.get(profile)
        if declared is None:
            return AmlPlacement("")
        return AmlPlacement(declared.compute, declared.instance_type or None, declared.instance_count, declared.tier)

    def datastore_for(self, container: str) -> str:
        """The workspace datastore that points at blob ``container``."""
        return self.datastores.get(container) or re.sub(r"[^A-Za-z0-9_]", "_", container)


def load_aml_settings(environ: Mapping[str, str]) -> AmlSettings:
    """Only the AML section from ``environ`` (for the CLI, which needs no storage settings).

    Raises:
        ConfigurationError: naming each invalid variable.
    """
    return load_section(AmlSettings, environ, "Invalid Azure ML settings")
