"""``haste aml check`` and ``haste aml create-environment``.

``check`` validates the AML_* settings and, when credentials are available,
that the workspace, each compute target, the datastores of the inputs and
outputs containers and the registered Environment exist; whatever it cannot
verify it explains. Those lookups are the Azure ML part of ``haste doctor``
(:mod:`hastegeo.doctor.gather_aml`, :mod:`hastegeo.doctor.checks_aml`): ``aml check``
runs them with the AML_* settings of this environment and the app's identity mode,
``haste doctor --only aml`` with the deployed app's settings and the operator's sign-in.
Every job mounts both datastores, so a missing one fails
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
    from hastegeo.compute.azure_ml.errors import aml_calls

    try:
        client = _client_factory(client_factory)(settings)
        outcome = register(client, settings, aml_calls(settings.retry_attempts, settings.retry_delay_s))
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
    from hastegeo.settings.app import StorageSettings

    fields = StorageSettings.model_fields

    def value(name: str) -> str:
        return environ.get(fields[name].alias or "", "").strip() or str(fields[name].default)

    return value("inputs_container"), value("outputs_container")


def _remote_problems(settings: AmlSettings, factory: ClientFactory, out: TextIO, containers: tuple[str, str]) -> int:
    """The Azure ML part of ``haste doctor`` (:mod:`hastegeo.doctor.checks_aml`), printed one line each."""
    from hastegeo.doctor.checks_aml import check_aml
    from hastegeo.doctor.gather_aml import lookups
    from hastegeo.doctor.result import FAILING, Status

    problems = 0
    for result in check_aml(lookups(settings, factory(settings), containers)):
        if result.status is Status.PASS:
            print(f"found: {result.name}", file=out)
        elif result.status is Status.WARN:
            print(f"missing: {result.name} ({result.found}: {result.fix})", file=out)
        elif result.status in FAILING:
            problems += 1
            print(f"problem: {result.name}: {result.found} (fix: {result.fix})", file=out)
    return problems


def _probe_credentials(settings: AmlSettings) -> str | None:
    from hastegeo.compute.azure_ml.client import build_credential

    try:
        build_credential(settings).get_token(ARM_SCOPE)
    except Exception as exc:
        return f"AML_IDENTITY_MODE={settings.identity_mode} found no usable identity ({describe_exception(exc)})"
    return None
