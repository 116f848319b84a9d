"""The app settings a deployment emits, evaluated from the Bicep text itself (no compiler here).

main.bicep's ``appSettings`` module call is read line by line (``param: expression``), each
expression evaluated with the drift check's evaluator over main.bicep's parameters (the values
main.bicepparam gives them, or overrides) and vars; then every entry of appSettings.bicep's
three settings objects is evaluated over those. A value only Azure knows (a resource property)
stays an ``Opaque``; :data:`STAND_INS` gives such values a realistic shape so the result can be
fed to ``hastegeo.settings.load.load_settings`` — the same check the app makes at start-up.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from tests.drift.conftest import REPO

INFRA = REPO / "infra"

# Values of resources the deployment creates, in the form the code parses.
STAND_INS: dict[str, str] = {
    "AzureWebJobsStorage__accountName": "sthasteabc",
    "HASTE_AUTH_TENANT_ID": "11111111-1111-1111-1111-111111111111",
    "BATCH_ACCOUNT_URL": "https://bahasteabc.westeurope.batch.azure.com",
    "BATCH_REGISTRY": "crhasteabc.azurecr.io",
    "BATCH_IDENTITY_RESOURCE_ID": "/subscriptions/s/resourceGroups/rg-haste/providers/"
    "Microsoft.ManagedIdentity/userAssignedIdentities/id-haste-pool-abc",
    "APPLICATIONINSIGHTS_CONNECTION_STRING": "InstrumentationKey=00000000-0000-0000-0000-000000000000",
    "AML_IMAGE": "crhasteabc.azurecr.io/haste-train:1",
    "AML_SUBSCRIPTION_ID": "00000000-0000-0000-0000-000000000001",
}


def read(path: str) -> str:
    return (INFRA / path).read_text(encoding="utf-8")


def module_params(text: str, symbol: str) -> dict[str, str]:
    """``{param: expression}`` of one module call's ``params`` block (one ``key: value`` per line)."""
    match = re.search(rf"^module {symbol} '[^']+' = .*?^  params: \{{\n(.*?)^  \}}", text, re.MULTILINE | re.DOTALL)
    assert match, f"module {symbol} has no params block"
    entries = {}
    for line in match.group(1).splitlines():
        entry = re.match(r"^    (\w+): (.+)$", line)
        if entry:
            entries[entry.group(1)] = entry.group(2).strip()
    return entries


def workload_map(image: bool) -> str:
    """BATCH_POOLS / BATCH_IMAGES as batch.bicep builds them from main.bicep's workloads."""
    workloads = re.findall(r"\{ name: '(\w+)', image: '(haste-\w+)'", read("main.bicep"))
    if image:
        return ",".join(f"{w}={STAND_INS['BATCH_REGISTRY']}/{i}:1" for w, i in workloads)
    return ",".join(f"{w}=haste-{w}" for w, _ in workloads)


def bicepparam_values(drift: ModuleType, environ: Mapping[str, str]) -> dict[str, str]:
    """main.bicep parameter values: main.bicepparam's defaults, or ``environ`` where it sets a variable."""
    env_params = drift.parse_bicepparam(read("main.bicepparam"), "main.bicepparam")
    return {p.param: environ.get(name, p.default or "") for name, p in env_params.items()}


def emitted_app_settings(drift: ModuleType, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Every app setting, name to value (``Opaque`` where only Azure knows it), for this environment."""
    environ = environ or {}
    main_text = read("main.bicep")
    main = drift.parse_bicep(main_text, "main.bicep")
    values: dict[str, Any] = dict(
        bicepparam_values(drift, {"DEPLOY_AUTH_CLIENT_ID": "00000000-0000-0000-0000-00000000c0de", **environ})
    )
    # Module outputs and resources are known only to Azure.
    for symbol in re.findall(r"^(?:module|resource) (\w+) ", main_text, re.MULTILINE):
        values[symbol] = drift.Opaque(symbol)
    params = {
        name: drift.evaluate(drift.parse_expression(expr), values, main.variables)
        for name, expr in module_params(main_text, "appSettings").items()
    }
    app = drift.parse_bicep(read("modules/appSettings.bicep"), "appSettings.bicep")
    settings: dict[str, Any] = {}
    for entries in app.objects.values():
        for name, (expression, _) in entries.items():
            settings[name] = drift.evaluate(drift.parse_expression(expression), params, app.variables)
    return settings


def as_environment(drift: ModuleType, settings: Mapping[str, Any]) -> dict[str, str]:
    """The settings as the app's environment: stand-ins for values only Azure knows."""
    environ = {}
    for name, value in settings.items():
        if isinstance(value, drift.Opaque):
            if name == "BATCH_POOLS":
                value = workload_map(image=False)
            elif name == "BATCH_IMAGES":
                value = workload_map(image=True)
            else:
                value = STAND_INS.get(name, f"opaque-{name.lower()}")
        environ[name] = value if isinstance(value, str) else str(value)
    return environ
