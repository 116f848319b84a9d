"""A healthy deployment, answered by the real SDK clients from recorded responses (see replay.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from hastegeo.compute.azure_ml.client import create_ml_client
from hastegeo.doctor.gather_arm import Arm
from hastegeo.doctor.gather_graph import Graph
from hastegeo.doctor.result import CheckResult
from hastegeo.doctor.run import Clients, Target, run
from tests.unit.doctor.replay import ReplayTransport, StaticCredential, recorded

SUB = "12345678-1234-1234-1234-123456789012"
TARGET = Target(SUB, "rg-haste-dev", "func-haste-abc123")
ARM = r"^https://management\.azure\.com/subscriptions/12345678-1234-1234-1234-123456789012"
SITE = ARM + r"/resourceGroups/rg-haste-dev/providers/Microsoft\.Web/sites/func-haste-abc123"
BATCH = ARM + r"/resourceGroups/rg-haste-dev/providers/Microsoft\.Batch/batchAccounts/bahasteabc123"
GRAPH = r"^https://graph\.microsoft\.com/v1\.0"
AML_LOCATION = ARM + r"/providers/Microsoft\.MachineLearningServices/locations/westeurope"


def healthy_arm() -> ReplayTransport:
    return (
        ReplayTransport()
        .add("GET", SITE + r"\?", recorded("web_site"))
        .add("POST", SITE + r"/config/appsettings/list", recorded("app_settings"))
        .add("GET", SITE + r"/config/authsettingsV2(/list)?\?", recorded("auth_settings_v2"))
        .add("GET", ARM + r"/resourceGroups/rg-haste-dev/resources\?", recorded("resources"))
        .add("GET", r"/providers/Microsoft\.Authorization/roleAssignments\?", recorded("role_assignments"))
        .add("GET", r"/userAssignedIdentities/id-haste-pool-abc123\?", recorded("pool_identity"))
        .add("GET", BATCH + r"\?", recorded("batch_account"))
        .add("GET", BATCH + r"/pools\?", recorded("pools"))
        .add("GET", ARM + r"/providers/Microsoft\.Batch/locations/westeurope/virtualMachineSkus", recorded("vm_skus"))
        .add("GET", AML_LOCATION + r"/usages\?", recorded("aml_usages"))
        .add("GET", AML_LOCATION + r"/vmSizes\?", recorded("aml_vm_sizes"))
    )


def healthy_graph() -> ReplayTransport:
    return (
        ReplayTransport()
        .add("GET", GRAPH + r"/applications\(appId=", recorded("graph_application"))
        .add("GET", GRAPH + r"/servicePrincipals\(appId=", recorded("graph_service_principal"))
        .add("GET", GRAPH + r"/servicePrincipals/[^/]+/appRoleAssignedTo", recorded("graph_role_assignments"))
    )


WORKSPACE = r"/providers/Microsoft\.MachineLearningServices/workspaces/mlw-haste-abc123"


def healthy_aml() -> ReplayTransport:
    return (
        ReplayTransport()
        .add("GET", WORKSPACE + r"\?", recorded("aml_workspace"))
        .add("GET", WORKSPACE + r"/computes/haste-cpu\?", recorded("aml_compute_cpu"))
        .add("GET", WORKSPACE + r"/computes/haste-gpu\?", recorded("aml_compute_gpu"))
        .add("GET", WORKSPACE + r"/datastores/haste_inputs\?", recorded("aml_datastore_inputs"))
        .add("GET", WORKSPACE + r"/datastores/haste_outputs\?", recorded("aml_datastore_outputs"))
    )


def healthy_monitor() -> ReplayTransport:
    return ReplayTransport().add(
        "POST", r"^https://api\.loganalytics\.io/v1/subscriptions/.*/query", recorded("logs_query")
    )


class Deployment:
    """Transports for ARM, Azure ML, Graph and Log Analytics; tests override single answers."""

    def __init__(self) -> None:
        self.arm, self.aml, self.graph, self.monitor = healthy_arm(), healthy_aml(), healthy_graph(), healthy_monitor()

    def clients(self) -> Clients:
        credential = StaticCredential()
        return Clients(
            Arm(credential, SUB, transport=self.arm, retry_total=0),
            Graph(credential, transport=self.graph),
            credential,
            lambda settings: create_ml_client(settings, credential, transport=self.aml),
            {"transport": self.monitor, "retry_total": 0},
        )

    def run(self, *only: str) -> list[CheckResult]:
        return run(TARGET, self.clients(), only or ("app", "roles", "batch", "aml", "entra", "easyauth", "telemetry"))


@pytest.fixture
def deployment() -> Deployment:
    return Deployment()


def by_name(results: list[CheckResult]) -> dict[str, CheckResult]:
    return {result.name: result for result in results}


Finder = Callable[[list[CheckResult]], dict[str, CheckResult]]
