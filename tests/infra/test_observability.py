"""The Azure side of telemetry, read from the emitted Bicep and host.json (no compiler here).

The alert rules and the workbook query names the code emits: every metric name, span
attribute and reason class in a query is checked against ``hastegeo.telemetry``, so a
rename in the code cannot leave an alert that never fires.
"""

from __future__ import annotations

import json
import re
from types import ModuleType

import pytest
import yaml

from hastegeo.settings.load import load_settings
from hastegeo.telemetry import meter, tracer
from tests.drift.conftest import REPO, load_drift
from tests.infra.emitted import as_environment, emitted_app_settings, module_params, read

MODULE = "modules/observability.bicep"
ATTRIBUTES = {
    value for name, value in vars(tracer).items() if name.isupper() and isinstance(value, str) and "haste." in value
}
METRICS = meter.METRIC_NAMES


@pytest.fixture(scope="module")
def drift() -> ModuleType:
    return load_drift()


def queries() -> list[str]:
    """Every KQL query of the module (alerts and workbook), with the module's ${...} parts left in."""
    return re.findall(r"^\s+query: '(.+)'$", read(MODULE), re.MULTILINE)


def test_host_json_keeps_successful_invocations() -> None:
    levels = json.loads((REPO / "host.json").read_text(encoding="utf-8"))["logging"]["logLevel"]
    assert levels["Host.Results"] in ("Information", "Debug", "Trace")


def test_the_host_exports_with_opentelemetry_and_the_app_configures_the_distro_once(drift: ModuleType) -> None:
    """One copy of each record (docs/adr/0020): the host in OpenTelemetry mode, as Microsoft's
    "Use OpenTelemetry with Azure Functions" says for Flex; the worker does not configure the distro
    a second time (PYTHON_APPLICATIONINSIGHTS_ENABLE_TELEMETRY), because the app configures it
    itself with the managed identity (hastegeo.telemetry.configure)."""
    assert json.loads((REPO / "host.json").read_text(encoding="utf-8"))["telemetryMode"] == "OpenTelemetry"
    emitted = emitted_app_settings(drift)
    assert "PYTHON_APPLICATIONINSIGHTS_ENABLE_TELEMETRY" not in emitted
    assert "PYTHON_ENABLE_OPENTELEMETRY" not in emitted


def test_a_deployment_at_its_defaults_exports_to_application_insights_with_entra(drift: ModuleType) -> None:
    emitted = emitted_app_settings(drift)
    settings = load_settings(as_environment(drift, emitted))
    assert settings.telemetry.export == "azure"
    assert emitted["APPLICATIONINSIGHTS_AUTHENTICATION_STRING"] == "Authorization=AAD"
    assert "InstrumentationKey" not in str(emitted.get("HASTE_OTEL_EXPORT"))
    monitoring = read("modules/monitoring.bicep")
    assert "DisableLocalAuth: true" in monitoring  # ingestion only with the app's identity
    assert "monitoringMetricsPublisher" in read("modules/roles.bicep")


def test_main_wires_the_module_with_where_alerts_go() -> None:
    params = module_params(read("main.bicep"), "observability")
    assert params["appInsightsId"] == "monitoring.outputs.appInsightsId"
    assert params["alertEmail"] == "alertEmail"
    assert params["alertWebhookUrl"] == "alertWebhookUrl"
    bicepparam = read("main.bicepparam")
    for variable in ("DEPLOY_ALERT_EMAIL", "DEPLOY_ALERT_WEBHOOK_URL", "DEPLOY_ALERT_FAILURE_RATE_PERCENT"):
        assert f"readEnvironmentVariable('{variable}'" in bicepparam
    env = yaml.safe_load((REPO / ".github/workflows/deploy.yml").read_text(encoding="utf-8"))
    text = json.dumps(env)
    assert "secrets.DEPLOY_ALERT_WEBHOOK_URL" in text  # a webhook URL may carry a token
    assert "vars.DEPLOY_ALERT_EMAIL" in text
    assert "@secure()\nparam alertWebhookUrl string" in read("main.bicep")


def test_receivers_exist_only_for_the_destinations_given() -> None:
    module = read(MODULE)
    assert "emailReceivers: empty(alertEmail) ? [] : [" in module
    assert "webhookReceivers: empty(alertWebhookUrl) ? [] : [" in module
    assert "actionGroup.id" in module


def test_the_four_alerts_exist_and_go_to_the_action_group() -> None:
    module = read(MODULE)
    keys = re.findall(r"^    key: '([a-z-]+)'$", module, re.MULTILINE)
    assert keys == ["poison", "failure-rate", "past-deadline", "reconciler-errors"]
    assert "scheduledQueryRules" in module
    descriptions = re.findall(r"^    description: '(.+)'$", module, re.MULTILINE)
    assert len(descriptions) == 4
    assert all("docs/operations.md#" in d for d in descriptions)  # each alert says where its runbook is
    anchors = set(re.findall(r"docs/operations.md#([a-z-]+)", module))
    runbook = (REPO / "docs/operations.md").read_text(encoding="utf-8")
    for anchor in anchors:
        assert f'<a id="{anchor}"></a>' in runbook, anchor


def test_every_query_names_what_the_code_emits() -> None:
    found = queries()
    assert len(found) == 9  # four alerts, five workbook questions
    for query in found:
        for name in re.findall(r'"(haste\.[a-z_.]+)"', query):
            assert name in METRICS or name in ATTRIBUTES, name
        for reason_class in re.findall(r'reasonClass == "(\w+)"', query):
            assert reason_class in meter.REASON_CLASSES, reason_class
        for dimension in re.findall(r"customDimensions\.(\w+)", query):
            assert dimension in {"backend", "workload", "reason_class", "finding", "source"}, dimension


def test_the_workbook_answers_the_runbook_questions() -> None:
    module = read(MODULE)
    titles = re.findall(r"^    title: '(.+)'$", module, re.MULTILINE)
    assert any("stuck" in t for t in titles)
    assert any("Failure rate by backend and reason class" in t for t in titles)
    assert any("Queue wait and provider wait" in t for t in titles)
    assert "Microsoft.Insights/workbooks" in module
    assert "serializedData: string({ version: 'Notebook/1.0', items: workbookItems" in module
