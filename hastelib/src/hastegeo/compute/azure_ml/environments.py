"""Registered Environments: make sure the configured one exists, or register a new version.

Used by the adapter (``ensure_registered``: create when missing, never
change an existing one) and by ``haste aml create-environment``
(``register``: create, or add a new version when the configured image or
build context changed). Each version we create carries a ``haste_source``
tag (``image:<ref>`` or ``build:<context hash>``) so "did it change?" is a
tag comparison, not a guess; Azure ML has no API to wait for an image build,
so neither function waits for one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from azure.ai.ml.entities import Environment

from hastegeo.compute.azure_ml.client import MLClientLike
from hastegeo.compute.azure_ml.entities import TAG_SOURCE, environment_definition, source_description
from hastegeo.compute.azure_ml.errors import BACKEND
from hastegeo.compute.azure_ml.settings import AmlSettings, parse_environment_reference
from hastegeo.compute.retry import ErrorKind, ProviderCalls
from hastegeo.utils.errors import TerminalBackendError

Action = Literal["exists", "created", "updated", "unchanged"]
HINT = "AML_ENVIRONMENT (name:version or name@label) and AML_IMAGE / AML_BUILD_CONTEXT"


@dataclass(frozen=True)
class EnvironmentOutcome:
    name: str
    version: str
    action: Action
    message: str

    @property
    def reference(self) -> str:
        return f"{self.name}:{self.version}"


def ensure_registered(client: MLClientLike, settings: AmlSettings, calls: ProviderCalls) -> EnvironmentOutcome:
    """The registered Environment ``AML_ENVIRONMENT``, created from the configured source when missing.

    Raises:
        TerminalBackendError: it is missing and cannot be created (no image or
            build context, or a label other than ``latest``).
        TransientBackendError: the service stayed unavailable for the whole budget.
    """
    name, version, label = parse_environment_reference(settings.environment)
    current = _get(client, calls, name, version, label)
    if current is not None:
        return EnvironmentOutcome(name, str(current.version), "exists", f"Environment {name}:{current.version} exists")
    new_version = version or _first_version(name, label)
    created = _create(client, calls, settings, name, new_version)
    return EnvironmentOutcome(
        name,
        str(created.version),
        "created",
        f"Environment {name}:{created.version} did not exist and was created from {source_description(settings)}",
    )


def register(client: MLClientLike, settings: AmlSettings, calls: ProviderCalls) -> EnvironmentOutcome:
    """Create ``AML_ENVIRONMENT``, or register a new version when its source changed. Idempotent.

    Raises:
        TerminalBackendError: a pinned ``name:version`` exists with another
            source (versions are immutable: the message says which to set).
    """
    name, version, label = parse_environment_reference(settings.environment)
    desired = source_description(settings)
    current = _get(client, calls, name, version, label)
    if current is None:
        created = _create(client, calls, settings, name, version or _first_version(name, label))
        return EnvironmentOutcome(
            name, str(created.version), "created", f"created {name}:{created.version} ({desired})"
        )
    existing = _source_of(current)
    if existing == desired:
        return EnvironmentOutcome(
            name, str(current.version), "unchanged", f"{name}:{current.version} already matches ({desired})"
        )
    next_version = _next_version(str(current.version))
    if version is not None:
        raise TerminalBackendError(
            f"Environment {name}:{version} exists with source {existing or 'unknown'}, not {desired}; versions are "
            f"immutable: set AML_ENVIRONMENT={name}:{next_version} (or {name}@latest) to register a new one",
            backend=BACKEND,
        )
    created = _create(client, calls, settings, name, next_version)
    return EnvironmentOutcome(
        name,
        str(created.version),
        "updated",
        f"registered {name}:{created.version} ({desired}); previous {name}:{current.version} "
        f"({existing or 'unknown source'})",
    )


def _get(
    client: MLClientLike, calls: ProviderCalls, name: str, version: str | None, label: str | None
) -> Environment | None:
    return calls.call_unless(
        {ErrorKind.NOT_FOUND},
        lambda: client.environments.get(name, version=version, label=label),
        what=f"get environment {name}",
        hint=HINT,
    )


def _create(client: MLClientLike, calls: ProviderCalls, settings: AmlSettings, name: str, version: str) -> Environment:
    definition = environment_definition(settings, name=name, version=version)
    return calls.call(
        lambda: client.environments.create_or_update(definition),
        what=f"create environment {name}:{version}",
        hint=HINT,
    )


def _source_of(environment: Environment) -> str | None:
    tagged = (environment.tags or {}).get(TAG_SOURCE)
    if tagged:
        return str(tagged)
    return f"image:{environment.image}" if environment.image else None


def _first_version(name: str, label: str | None) -> str:
    if label not in (None, "latest"):
        raise TerminalBackendError(
            f"Environment {name}@{label} does not exist and a label cannot be created: "
            f"set AML_ENVIRONMENT to {name}:<version> or {name}@latest",
            backend=BACKEND,
        )
    return "1"


def _next_version(version: str) -> str:
    return str(int(version) + 1) if version.isdigit() else f"{version}.1"
