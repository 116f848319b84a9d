"""``haste aml check`` and ``haste aml create-environment``.

``check`` validates the AML_* settings and, when credentials are available,
that the workspace, each compute target, the datastores of the inputs and
outputs containers and the registered Environment exist; whatever it cannot
verify it explains. Every job mounts both datastores, so a missing one fails
every submission: it is a problem, not a warning. ``create-environment``
registers ``AML_ENVIRONMENT`` from ``AML_BUILD_CONTEXT`` or ``AML_IMAGE`` (a
new version when the source changed; nothing when it did not) and prints
name, version and what changed.

Exit codes: 0 all good, 1 a problem was found (or could not be checked),
2 the settings are invalid. azure-ai-ml is imported only when a command
needs it, so ``haste --help`` stays fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from hastegeo.compute.azure_ml.settings import AmlSettings, EnvironmentSource, load_aml_settings
from hastegeo.utils.errors import HasteError, describe_exception

if TYPE_CHECKING:
    from hastegeo.compute.azure_ml.client import ClientFactory

ARM_SCOPE = "https://management.azure.com/.default"
# Returns None when a token can be had, else a readable reason.
CredentialProbe = Callable[[AmlSettings], "str | None"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``aml check`` and ``aml create-environment`` to the ``haste`` parser."""
    aml = subparsers.add_parser("aml", help="Azure ML backend: check settings, register the Environment")
    commands = aml.add_subparsers(dest="aml_command", required=True, metavar="COMMAND")
    check = commands.add_parser("check", help="validate AML_* settings and that workspace, compute and env exist")
    check.set_defaults(handler=lambda args: run_check())
    create = commands.add_parser(
        "create-environment", help="register AML_ENVIRONMENT from AML_IMAGE or AML_BUILD_CONTEXT (idempotent)"
    )
    create.set_defaults(handler=lambda args: run_create_environment())


def _settings(environ: Mapping[str, str] | None, out: TextIO) -> AmlSettings | None:
    try:
        return load_aml_settings(os.environ if environ is None else environ)
    except HasteError as exc:
        print(f"error: {exc}", file=out)
        return None


def _client_factory(client_factory: ClientFactory | None) -> ClientFactory:
    if client_factory is not None:
        return client_factory
    from hastegeo.compute.azure_ml.client import create_ml_client

    return create_ml_client


def run_create_environment(
    *, environ: Mapping[str, str] | None = None, client_factory: ClientFactory | None = None, out: TextIO = sys.stdout
) -> int:
    """Register (or update to a new version) ``AML_ENVIRONMENT``; prints name, version and what changed."""
    settings = _settings(environ, out)
    if settings is None:
        return 2
    if not settings.enabled:
        print("error: AML_MODE is Disabled: set AML_MODE=Existing (or Create) and the workspace coordinates", file=out)
        return 2
    from hastegeo.compute.azure_ml.environments import register
    from hastegeo.compute.azure_ml.errors import Retry

    try:
        client = _client_factory(client_factory)(settings)
        outcome = register(client, settings, Retry(settings.retry_attempts, settings.retry_delay_s))
    except HasteError as exc:
        print(f"error: {describe_exception(exc)}", file=out)
        return 1
    print(f"name: {outcome.name}", file=out)
    print(f"version: {outcome.version}", file=out)
    print(f"change: {outcome.action} - {outcome.message}", file=out)
    if settings.environment_source is not EnvironmentSource.REGISTERED:
        print(
            f"note: jobs use it only with AML_ENVIRONMENT_SOURCE=registered (now {settings.environment_source.value})",
            file=out,
        )
    return 0


def run_check(
    *,
    environ: Mapping[str, str] | None = None,
    client_factory: ClientFactory | None = None,
    probe: CredentialProbe | None = None,
    out: TextIO = sys.stdout,
) -> int:
    """Validate the settings, then (with credentials) the workspace, compute and Environment."""
    settings = _settings(environ, out)
    if settings is None:
        return 2
    problems = _static_problems(settings, out)
    if not settings.enabled:
        print(
            "Azure ML is disabled (AML_MODE=Disabled). To enable it set AML_MODE=Existing (or Create), "
            "AML_SUBSCRIPTION_ID, AML_RESOURCE_GROUP and AML_WORKSPACE; every other AML_* setting has a default.",
            file=out,
        )
        return 1
    reason = (probe or _probe_credentials)(settings)
    if reason is not None:
        print(f"skipped: workspace, compute and environment checks need credentials: {reason}", file=out)
        return 1
    containers = job_containers(os.environ if environ is None else environ)
    problems += _remote_problems(settings, _client_factory(client_factory), out, containers)
    print("ok: Azure ML is ready" if not problems else f"{problems} problem(s) found", file=out)
    return 0 if not problems else 1


def _static_problems(settings: AmlSettings, out: TextIO) -> int:
    print(f"mode: {settings.mode.value}", file=out)
    print(f"workspace: {settings.subscription_id}/{settings.resource_group}/{settings.workspace}", file=out)
    print(f"identity: {settings.identity_mode}", file=out)
    print("compute: " + ", ".join(f"{w}={c}" for w, c in sorted(settings.compute.items())), file=out)
    print(f"environment source: {settings.environment_source.value}", file=out)
    if settings.environment_source is EnvironmentSource.IMAGE:
        print(f"environment image: {settings.image or '(none: AML_IMAGE is empty)'}", file=out)
    elif settings.environment_source is EnvironmentSource.REGISTERED:
        print(f"environment: {settings.environment}", file=out)
    problems = 0
    checks: list[tuple[bool, str]] = [
        (
            settings.environment_source is EnvironmentSource.IMAGE and not settings.image,
            "AML_IMAGE is empty: every job spec must name an image (the processors do not): set AML_IMAGE",
        ),
        (
            bool(settings.build_context) and not Path(settings.build_context).is_dir(),
            f"AML_BUILD_CONTEXT {settings.build_context!r} is not a directory",
        ),
        (
            bool(settings.code_dir) and not Path(settings.code_dir).is_dir(),
            f"AML_CODE_DIR {settings.code_dir!r} is not a directory",
        ),
    ]
    for failed, message in checks:
        if failed:
            problems += 1
            print(f"problem: {message}", file=out)
    if settings.code_dir:
        print("warning: AML_CODE_DIR is set: runs use a local code snapshot and may not be reproducible", file=out)
    return problems


def job_containers(environ: Mapping[str, str]) -> tuple[str, str]:
    """The inputs and outputs containers jobs mount (HASTE_INPUTS_CONTAINER, HASTE_OUTPUTS_CONTAINER).

    Read through the storage settings' own fields (aliases and defaults), without the rest of
    that section, which needs a storage connection the check has no use for.
    """
    from hastegeo.config import StorageSettings

    fields = StorageSettings.model_fields

    def value(name: str) -> str:
        return environ.get(fields[name].alias or "", "").strip() or str(fields[name].default)

    return value("inputs_container"), value("outputs_container")


def _remote_problems(settings: AmlSettings, factory: ClientFactory, out: TextIO, containers: tuple[str, str]) -> int:
    from hastegeo.compute.azure_ml.errors import Retry, is_not_found
    from hastegeo.compute.azure_ml.settings import parse_environment_reference

    client = factory(settings)
    retry = Retry(settings.retry_attempts, settings.retry_delay_s)
    name, version, label = parse_environment_reference(settings.environment)
    lookups: list[tuple[str, str, Callable[[], object]]] = [
        ("workspace", settings.workspace, lambda: client.workspaces.get(settings.workspace)),
        *[
            ("compute", target, partial(client.compute.get, target))
            for target in sorted(set(settings.compute.values()))
        ],
        *[
            (
                "datastore",
                settings.datastore_for(container),
                partial(client.datastores.get, settings.datastore_for(container)),
            )
            for container in containers
        ],
    ]
    if settings.environment_source is EnvironmentSource.REGISTERED:
        lookups.append(
            ("environment", settings.environment, lambda: client.environments.get(name, version=version, label=label))
        )
    problems = 0
    for kind, target, lookup in lookups:
        hint = {
            "workspace": "AML_WORKSPACE",
            "compute": "AML_COMPUTE",
            "datastore": "AML_DATASTORES",
            "environment": "AML_ENVIRONMENT",
        }[kind]
        try:
            retry.run(lookup, action=f"get {kind} {target}", hint=hint)
            print(f"found: {kind} {target}", file=out)
        except HasteError as exc:
            cause = exc.__cause__
            if kind == "environment" and cause is not None and is_not_found(cause):
                print(
                    f"missing: environment {target} (created on the first submit, or run create-environment)", file=out
                )
                continue
            problems += 1
            print(f"problem: {exc}", file=out)
    return problems


def _probe_credentials(settings: AmlSettings) -> str | None:
    from hastegeo.compute.azure_ml.client import build_credential

    try:
        build_credential(settings).get_token(ARM_SCOPE)
    except Exception as exc:
        return f"AML_IDENTITY_MODE={settings.identity_mode} found no usable identity ({describe_exception(exc)})"
    return None
