"""Run the doctor: read the deployed app once, then each area's reads and checks.

The deployed app's own settings (read through ARM) are the source of what it needs: they go
through the same settings model the app validates at start-up, so the doctor checks the
storage account, Batch account, registry, pools, workspace and client id the app really uses.
An area whose reads fail reports ``unknown`` with the permission that is missing, and the
other areas still run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlparse

from hastegeo.auth import AuthMode
from hastegeo.compute.azure_batch.settings import BatchSettings
from hastegeo.compute.azure_ml.settings import AmlSettings
from hastegeo.doctor import checks_aml, checks_auth, checks_batch, checks_roles, checks_telemetry
from hastegeo.doctor.facts import Lookup, Site, Unreadable
from hastegeo.doctor.needs import ROLE_IDS, ROLE_NAMES, RoleNeed, Scope, Who
from hastegeo.doctor.result import AREAS, CheckResult, Status, deferred, failed, passed
from hastegeo.settings.app import AuthSettings, EventSettings, StorageSettings, TelemetrySettings
from hastegeo.settings.fields import Section, load_section
from hastegeo.utils.errors import ConfigurationError

if TYPE_CHECKING:
    from azure.core.credentials import TokenCredential

    from hastegeo.compute.azure_ml.client import ClientFactory
    from hastegeo.doctor.gather_arm import Arm
    from hastegeo.doctor.gather_graph import Graph

INSIGHTS = "microsoft.insights/components"
VAULT = "microsoft.keyvault/vaults"
TOPIC = "microsoft.eventgrid/topics"
# What a cluster's identity needs when Azure ML mounts the credential-less datastores with it.
CLUSTER_NEEDS = (
    RoleNeed("compute", "storageBlobDataReader", "inputs", "mount the inputs datastore"),
    RoleNeed("compute", "storageBlobDataContributor", "outputs", "write outputs and logs through the datastore"),
    RoleNeed("compute", "acrPull", "registry", "pull the job image"),
)
S = TypeVar("S", bound=Section)


@dataclass(frozen=True)
class Target:
    subscription_id: str
    resource_group: str
    app: str


@dataclass
class Clients:
    """Everything that talks to Azure, built once; tests build it around replaying transports."""

    arm: Arm
    graph: Graph
    credential: TokenCredential
    aml_factory: ClientFactory
    monitor_kwargs: dict[str, Any]


def default_clients(credential: TokenCredential, subscription_id: str) -> Clients:
    from hastegeo.compute.azure_ml.client import create_ml_client
    from hastegeo.doctor.gather_arm import Arm
    from hastegeo.doctor.gather_graph import Graph

    return Clients(
        Arm(credential, subscription_id),
        Graph(credential),
        credential,
        lambda settings: create_ml_client(settings, credential),
        {},
    )


def run(
    target: Target,
    clients: Clients,
    only: Iterable[str] = AREAS,
    telemetry_hours: int = 24,
    groups_claim: str | None = None,
) -> list[CheckResult]:
    """Every check of the selected areas, in a stable order. Reads nothing an area left out needs.

    ``groups_claim`` is the deployment's HASTE_GROUPS_CLAIM (``application`` or ``security``) when known.
    """
    areas = set(only)
    site = clients.arm.site(target.resource_group, target.app)
    if isinstance(site, Unreadable):
        return [
            CheckResult(
                "app",
                f"function app {target.app}",
                Status.UNKNOWN,
                f"could not be read: {site.reason}",
                "check --subscription/--resource-group/--app (azd: AZURE_SUBSCRIPTION_ID, AZURE_RESOURCE_GROUP, "
                "FUNCTION_APP_NAME) and that you may list the app's settings (Website Contributor or Contributor)",
            )
        ]
    results: list[CheckResult] = []
    found = f"{site.host_name}, identity {site.principal_id or 'none'}"
    if "app" in areas:
        results.append(passed("app", f"function app {site.name}", found))
    sections = _Sections(site, results, report="app" in areas)
    steps: Sequence[tuple[str, Callable[[], list[CheckResult]]]] = (
        ("roles", lambda: _roles(target, clients, site, sections)),
        ("batch", lambda: _batch(target, clients, sections)),
        ("aml", lambda: _aml(target, clients, sections)),
        ("entra", lambda: _entra(clients, site, sections, groups_claim)),
        ("easyauth", lambda: _easy_auth(target, clients, sections)),
        ("telemetry", lambda: _telemetry(target, clients, sections, telemetry_hours)),
    )
    for area, step in steps:
        if area in areas:
            results.extend(step())
    return results


class _Sections:
    """The deployed settings, one section at a time: a bad one is reported once, and only its checks skip."""

    def __init__(self, site: Site, results: list[CheckResult], report: bool) -> None:
        self.site, self.results, self.report = site, results, report
        self._cache: dict[type[Section], Section | None] = {}

    def get(self, model: type[S]) -> S | None:
        if model not in self._cache:
            try:
                self._cache[model] = load_section(model, self.site.settings, title=f"{model.__name__}")
            except ConfigurationError as exc:
                self._cache[model] = None
                if self.report:
                    self.results.append(
                        CheckResult(
                            "app",
                            "app settings",
                            Status.FAIL,
                            str(exc),
                            "fix the named settings (docs/deploy.md) and run `azd provision`",
                        )
                    )
        value = self._cache[model]
        return value if isinstance(value, model) else None


def _arm_id(subscription: str, group: str, provider: str, name: str) -> str:
    return f"/subscriptions/{subscription}/resourceGroups/{group}/providers/{provider}/{name}"


def batch_account_name(url: str) -> str:
    """``https://<name>.<region>.batch.azure.com`` → ``<name>``."""
    return (urlparse(url).hostname or "").split(".", 1)[0]


def _data_scopes(target: Target, sections: _Sections) -> dict[Scope, str | None]:
    """The ids of the storage account, the two containers jobs use and the registry, from the app's settings."""
    storage, batch = sections.get(StorageSettings), sections.get(BatchSettings)
    sub, group = target.subscription_id, target.resource_group
    scopes: dict[Scope, str | None] = {}
    if storage is not None and storage.account_name:
        account = _arm_id(sub, group, "Microsoft.Storage/storageAccounts", storage.account_name)
        containers = f"{account}/blobServices/default/containers"
        scopes |= {
            "storage": account,
            "inputs": f"{containers}/{storage.inputs_container}",
            "outputs": f"{containers}/{storage.outputs_container}",
        }
    if batch is not None and batch.registry:
        scopes["registry"] = _arm_id(
            sub, group, "Microsoft.ContainerRegistry/registries", batch.registry.split(".", 1)[0]
        )
    return scopes


def _roles(target: Target, clients: Clients, site: Site, sections: _Sections) -> list[CheckResult]:
    batch, aml, events = sections.get(BatchSettings), sections.get(AmlSettings), sections.get(EventSettings)
    sub, group = target.subscription_id, target.resource_group
    scopes = _data_scopes(target, sections)
    principals: dict[Who, str | Unreadable | None] = {"app": site.principal_id, "compute": None}
    results: list[CheckResult] = []
    if batch is not None and batch.account_url:
        name = batch_account_name(batch.account_url)
        scopes["batch"] = _arm_id(sub, group, "Microsoft.Batch/batchAccounts", name)
    if batch is not None and batch.identity_resource_id:
        principals["compute"] = clients.arm.principal_of(batch.identity_resource_id)
    if aml is not None and aml.enabled:
        scopes["workspace"] = _arm_id(
            aml.subscription_id, aml.resource_group, "Microsoft.MachineLearningServices/workspaces", aml.workspace
        )
    resources = clients.arm.resources(group, (INSIGHTS, VAULT, TOPIC))
    if isinstance(resources, Unreadable):
        scopes |= {"insights": None, "vault": None}
    else:
        scopes |= {"insights": resources.get(INSIGHTS), "vault": resources.get(VAULT)}
    if events is not None and events.eventgrid_endpoint:
        # The app publishes each job event to the topic with its identity (EventGrid Data Sender).
        topic = None if isinstance(resources, Unreadable) else resources.get(TOPIC)
        scopes["topic"] = topic
        if topic is None and not isinstance(resources, Unreadable):
            results.append(
                failed(
                    "roles",
                    "app: EventGrid Data Sender on topic",
                    f"HASTE_EVENTGRID_ENDPOINT is {events.eventgrid_endpoint} but the resource group has no topic",
                    "set DEPLOY_EVENT_GRID=true and run `azd provision` (modules/eventGrid.bicep), or clear it",
                )
            )
    assignments = clients.arm.assignments(sorted({scope for scope in scopes.values() if scope}))
    return results + checks_roles.check_roles(principals, scopes, assignments)


def _batch(target: Target, clients: Clients, sections: _Sections) -> list[CheckResult]:
    batch = sections.get(BatchSettings)
    if batch is None or not batch.account_url:
        return [CheckResult("batch", "Batch account", Status.WARN, "BATCH_ACCOUNT_URL is not set: Batch is not used")]
    read = clients.arm.batch(target.resource_group, batch_account_name(batch.account_url))
    if isinstance(read, Unreadable):
        return [checks_batch.unreadable("Batch account", read)]
    account, pools, skus = read
    wanted = [pool for pool in pools if pool.name in set(batch.pools.values())]
    return [
        # A quota request is the operator's step after the first deploy (docs/deploy.md): deferred.
        *deferred(checks_batch.check_capacity(account, wanted, skus, sorted(set(batch.pools.values())))),
        *checks_batch.check_pools(pools, batch.pools),
    ]


def _aml(target: Target, clients: Clients, sections: _Sections) -> list[CheckResult]:
    from hastegeo.doctor.gather_aml import lookups

    aml, storage = sections.get(AmlSettings), sections.get(StorageSettings)
    if aml is None or storage is None:
        return []
    if not aml.enabled:
        return [CheckResult("aml", "Azure ML", Status.WARN, "AML_MODE is Disabled: Azure ML is not used")]
    containers = (storage.inputs_container, storage.outputs_container)
    found = lookups(aml, clients.aml_factory(aml), containers)
    results = checks_aml.check_aml(found)
    clusters = [lookup for lookup in found if lookup.kind == "compute" and lookup.found]
    region = next((lookup.extra.get("location", "") for lookup in found if lookup.kind == "workspace"), "")
    if clusters and region:
        capacity = clients.arm.aml_capacity(aml.subscription_id, region)
        results += checks_aml.check_quota(clusters, capacity, region)
    return results + _cluster_identities(target, clients, sections, clusters)


def _cluster_identities(
    target: Target, clients: Clients, sections: _Sections, clusters: list[Lookup]
) -> list[CheckResult]:
    """Each cluster's managed identity holds what mounting the credential-less datastores needs.

    Azure ML mounts a datastore without credentials with the identity of the compute that runs the
    job; in Existing mode that is your cluster's, which DEPLOY_AML_COMPUTE_PRINCIPAL_ID names.
    """
    scopes = _data_scopes(target, sections)
    wanted = {need.scope: scopes.get(need.scope) for need in CLUSTER_NEEDS}
    results: list[CheckResult] = []
    principals: dict[str, list[str]] = {}
    for cluster in clusters:
        if not cluster.extra:
            continue
        ids = [p for p in cluster.extra.get("principals", "").split(",") if p]
        for identity_id in filter(None, cluster.extra.get("identities", "").split(",")):
            principal = clients.arm.principal_of(identity_id)
            if isinstance(principal, str) and principal:
                ids.append(principal)
        principals[cluster.name] = ids
    if not principals:
        return results
    assignments = clients.arm.assignments(sorted({scope for scope in wanted.values() if scope}))
    for cluster_name, ids in sorted(principals.items()):
        if not ids:
            results.append(
                failed(
                    "aml",
                    f"cluster {cluster_name} identity",
                    "no managed identity: Azure ML cannot mount credential-less datastores for its jobs",
                    f"az ml compute update --name {cluster_name} --identity-type UserAssigned "
                    "--user-assigned-identities <identity id>, then DEPLOY_AML_COMPUTE_PRINCIPAL_ID=<its principal id> "
                    "and `azd provision`",
                )
            )
            continue
        for need in CLUSTER_NEEDS:
            scope_id = wanted.get(need.scope)
            if scope_id is None:
                continue
            name = f"cluster {cluster_name}: {ROLE_NAMES[need.role]} on {need.scope}"
            got = assignments.get(scope_id, Unreadable("not read"))
            if isinstance(got, Unreadable):
                results.append(CheckResult("aml", name, Status.UNKNOWN, f"could not be read: {got.reason}"))
            elif any(checks_roles.covers(a, need, principal, scope_id) for a in got for principal in ids):
                results.append(passed("aml", name, f"its identity may {need.why}"))
            else:
                results.append(
                    CheckResult(
                        "aml",
                        name,
                        Status.FAIL,
                        f"identity {', '.join(ids)} has no {ROLE_NAMES[need.role]} on {scope_id}: jobs cannot "
                        f"{need.why}",
                        f"set DEPLOY_AML_COMPUTE_PRINCIPAL_ID={ids[0]} and run `azd provision` "
                        f"(or: {checks_roles.grant_command(need, ids[0], scope_id)})",
                    )
                )
    assert all(need.role in ROLE_IDS for need in CLUSTER_NEEDS)
    return results


def _entra(clients: Clients, site: Site, sections: _Sections, groups_claim: str | None) -> list[CheckResult]:
    auth = sections.get(AuthSettings)
    if auth is None:
        return []
    if auth.mode is not AuthMode.APP_SERVICE or not auth.client_id:
        return [
            CheckResult(
                "entra",
                "app registration",
                Status.FAIL,
                f"HASTE_AUTH_MODE={auth.mode.value}, HASTE_AUTH_CLIENT_ID={auth.client_id or 'empty'}",
                "set DEPLOY_AUTH_CLIENT_ID to the client id infra/scripts/app-registration.sh prints; `azd provision`",
            )
        ]
    app = clients.graph.application(auth.client_id)
    if isinstance(app, Unreadable):
        return [
            CheckResult(
                "entra",
                "app registration",
                Status.UNKNOWN,
                f"{auth.client_id} could not be read: {app.reason}",
                "sign in as its owner or with Application.Read.All; a 404 means HASTE_AUTH_CLIENT_ID names "
                "no registration in this tenant",
            )
        ]
    grants = clients.graph.role_grants(auth.client_id)
    return checks_auth.check_registration(app, site.host_name, grants, auth.project_groups, groups_claim)


def _easy_auth(target: Target, clients: Clients, sections: _Sections) -> list[CheckResult]:
    auth = sections.get(AuthSettings)
    if auth is None:
        return []
    found = clients.arm.auth_settings(target.resource_group, target.app)
    if isinstance(found, Unreadable):
        return [
            CheckResult(
                "easyauth",
                "App Service authentication",
                Status.UNKNOWN,
                f"could not be read: {found.reason}",
                "sign in with Website Contributor (or Reader plus list access) on the app",
            )
        ]
    return checks_auth.check_easy_auth(found, auth.client_id)


def _telemetry(target: Target, clients: Clients, sections: _Sections, hours: int) -> list[CheckResult]:
    from hastegeo.doctor.gather_monitor import telemetry

    export = sections.get(TelemetrySettings)
    resources = clients.arm.resources(target.resource_group, (INSIGHTS,))
    name = "Application Insights"
    if isinstance(resources, Unreadable) or INSIGHTS not in resources:
        reason = resources.reason if isinstance(resources, Unreadable) else "none in the resource group"
        return [
            CheckResult("telemetry", name, Status.UNKNOWN, reason, "run `azd provision` (modules/monitoring.bicep)")
        ]
    found = telemetry(clients.credential, resources[INSIGHTS], hours, **clients.monitor_kwargs)
    if isinstance(found, Unreadable):
        return [
            CheckResult(
                "telemetry",
                name,
                Status.UNKNOWN,
                f"could not be queried: {found.reason}",
                "sign in with Reader (or Monitoring Reader) on the Application Insights resource",
            )
        ]
    return [checks_telemetry.check_telemetry(found, hours, export.export if export else "off")]
