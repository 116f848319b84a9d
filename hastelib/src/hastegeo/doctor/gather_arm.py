"""Read the Function App, role assignments, the Batch account and the resource group through ARM.

The only module that imports azure-mgmt-web, azure-mgmt-authorization and azure-mgmt-batch
(the ``doctor`` extra), each inside the function that needs it. ``client_kwargs`` reach every
client unchanged: tests pass ``transport=`` to replay recorded answers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from hastegeo.doctor.facts import (
    AmlUsage,
    AmlVmSize,
    Assignment,
    AuthSettings,
    BatchAccount,
    Pool,
    Site,
    Unreadable,
    VmSku,
    family_key,
)

if TYPE_CHECKING:
    from azure.core.credentials import TokenCredential

RESOURCES_API = "2021-04-01"
# Microsoft.MachineLearningServices usages and VM sizes per region (REST API 2024-10-01).
AML_API = "2024-10-01"
_USAGE_TAIL = {"_cluster_dedicated_vcpus": "dedicated", "_cluster_lowpriority_vcpus": "lowpriority"}
IDENTITY_API = "2023-01-31"


def unreadable(exc: Exception) -> Unreadable:
    """One line out of an SDK error: status, code and the message's first line (never the SDK's repr)."""
    from azure.core.exceptions import HttpResponseError

    if isinstance(exc, HttpResponseError):
        error = exc.error
        code = getattr(error, "code", None) or exc.reason or type(exc).__name__
        message = str(getattr(error, "message", None) or exc.message or "").splitlines()
        return Unreadable(f"{exc.status_code} {code}: {message[0] if message else ''}".strip(), exc.status_code)
    return Unreadable(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")


class Arm:
    """The ARM reads of one subscription, with one credential and the same client options for every client."""

    def __init__(self, credential: TokenCredential, subscription_id: str, **client_kwargs: Any) -> None:
        self.credential = credential
        self.subscription_id = subscription_id
        self.client_kwargs = client_kwargs
        self._listings: dict[str, dict[str, str] | Unreadable] = {}
        self._batch: dict[tuple[str, str], tuple[BatchAccount, list[Pool], dict[str, VmSku]] | Unreadable] = {}

    def _web(self) -> Any:
        from azure.mgmt.web import WebSiteManagementClient

        return WebSiteManagementClient(self.credential, self.subscription_id, **self.client_kwargs)

    def site(self, group: str, name: str) -> Site | Unreadable:
        from azure.core.exceptions import AzureError

        web = self._web()
        try:
            site = web.web_apps.get(group, name)
            settings = web.web_apps.list_application_settings(group, name).properties or {}
        except AzureError as exc:
            return unreadable(exc)
        identity = site.identity
        return Site(
            name=site.name or name,
            principal_id=getattr(identity, "principal_id", None) if identity else None,
            host_name=site.default_host_name or "",
            location=site.location or "",
            settings={str(key): str(value) for key, value in settings.items()},
        )

    def auth_settings(self, group: str, name: str) -> AuthSettings | Unreadable:
        from azure.core.exceptions import AzureError

        try:
            found = self._web().web_apps.get_auth_settings_v2(group, name)
        except AzureError as exc:
            return unreadable(exc)
        props = getattr(found, "properties", None) or found
        platform, validation = props.platform, props.global_validation
        aad = props.identity_providers.azure_active_directory if props.identity_providers else None
        registration = aad.registration if aad else None
        audiences = aad.validation.allowed_audiences if aad and aad.validation else None
        return AuthSettings(
            enabled=bool(platform and platform.enabled),
            require_authentication=bool(validation and validation.require_authentication),
            unauthenticated_action=_text(validation.unauthenticated_client_action) if validation else "",
            aad_enabled=bool(aad and aad.enabled is not False),
            client_id=(registration.client_id or "") if registration else "",
            allowed_audiences=tuple(audiences or ()),
        )

    def _get_json(self, path: str) -> Any:
        """One ARM GET through the web client's pipeline (same credential, retries and transport)."""
        from azure.core.exceptions import HttpResponseError
        from azure.core.rest import HttpRequest

        response = self._web().send_request(HttpRequest("GET", path))
        if response.status_code != 200:
            raise HttpResponseError(response=response)
        return response.json()

    def resources(self, group: str, types: Iterable[str]) -> dict[str, str] | Unreadable:
        """Resource type (lower case) -> the id of the first resource of that type in the group.

        The group is listed once per run; later calls filter that listing.
        """
        if group not in self._listings:
            self._listings[group] = self._list_group(group)
        listing = self._listings[group]
        if isinstance(listing, Unreadable):
            return listing
        wanted = {t.lower() for t in types}
        return {kind: resource_id for kind, resource_id in listing.items() if kind in wanted}

    def _list_group(self, group: str) -> dict[str, str] | Unreadable:
        from azure.core.exceptions import AzureError

        found: dict[str, str] = {}
        path: str | None = (
            f"/subscriptions/{self.subscription_id}/resourceGroups/{group}/resources?api-version={RESOURCES_API}"
        )
        try:
            while path:
                body = self._get_json(path)
                for item in body.get("value", []):
                    found.setdefault(str(item.get("type", "")).lower(), str(item["id"]))
                path = body.get("nextLink")
        except AzureError as exc:
            return unreadable(exc)
        return found

    def principal_of(self, identity_id: str) -> str | Unreadable:
        """The principal (object) id of a user-assigned identity, by its resource id."""
        from azure.core.exceptions import AzureError

        try:
            body = self._get_json(f"{identity_id}?api-version={IDENTITY_API}")
        except AzureError as exc:
            return unreadable(exc)
        principal = (body.get("properties") or {}).get("principalId")
        return str(principal) if principal else Unreadable("the identity has no principal id")

    def assignments(self, scopes: Iterable[str]) -> dict[str, list[Assignment] | Unreadable]:
        """Role assignments that apply at each scope (at, above or below it), or why they could not be read."""
        from azure.core.exceptions import AzureError
        from azure.mgmt.authorization import AuthorizationManagementClient

        client = AuthorizationManagementClient(
            self.credential, self.subscription_id, api_version="2022-04-01", **self.client_kwargs
        )
        result: dict[str, list[Assignment] | Unreadable] = {}
        for scope in scopes:
            try:
                result[scope] = [
                    Assignment(
                        principal_id=str(item.principal_id),
                        role_id=str(item.role_definition_id).rstrip("/").rsplit("/", 1)[-1],
                        scope=str(item.scope),
                    )
                    for item in client.role_assignments.list_for_scope(scope)
                ]
            except AzureError as exc:
                result[scope] = unreadable(exc)
        return result

    def aml_capacity(
        self, subscription: str, location: str
    ) -> tuple[dict[str, AmlVmSize], list[AmlUsage]] | Unreadable:
        """Azure ML's VM sizes (by lower-case name) and its subscription-level usages in one region.

        Azure ML compute counts against its own quota, not the subscription's VM cores: the usages
        API of Microsoft.MachineLearningServices is where that quota is (``az ml compute list-usage``).
        """
        from azure.core.exceptions import AzureError

        base = f"/subscriptions/{subscription}/providers/Microsoft.MachineLearningServices/locations/{location}"
        try:
            sizes_body = self._get_json(f"{base}/vmSizes?api-version={AML_API}")
            usages: list[AmlUsage] = []
            path: str | None = f"{base}/usages?api-version={AML_API}"
            while path:
                body = self._get_json(path)
                usages.extend(_aml_usage(item) for item in body.get("value", []) if _subscription_level(item))
                path = body.get("nextLink")
        except AzureError as exc:
            return unreadable(exc)
        sizes = {
            str(item.get("name", "")).lower(): AmlVmSize(
                str(item.get("name", "")), str(item.get("family", "")), int(item.get("vCPUs") or 0)
            )
            for item in sizes_body.get("value", [])
        }
        return sizes, usages

    def batch(self, group: str, account: str) -> tuple[BatchAccount, list[Pool], dict[str, VmSku]] | Unreadable:
        """The account's quotas, its pools and the VM sizes Batch offers in its region (by lower-case name).

        Read once per account: the roles and the Batch areas both use it.
        """
        if (group, account) not in self._batch:
            self._batch[group, account] = self._read_batch(group, account)
        return self._batch[group, account]

    def _read_batch(self, group: str, account: str) -> tuple[BatchAccount, list[Pool], dict[str, VmSku]] | Unreadable:
        from azure.core.exceptions import AzureError
        from azure.mgmt.batch import BatchManagementClient

        client = BatchManagementClient(self.credential, self.subscription_id, **self.client_kwargs)
        try:
            found = client.batch_account.get(group, account)
            pools = [_pool(pool) for pool in client.pool.list_by_batch_account(group, account)]
            skus = {
                str(sku.name).lower(): VmSku(str(sku.name), str(sku.family_name or ""), _vcpus(sku.capabilities or ()))
                for sku in client.location.list_supported_virtual_machine_skus(found.location)
            }
        except AzureError as exc:
            return unreadable(exc)
        props: Any = found.properties  # read-only model; every field is optional
        return (
            BatchAccount(
                name=found.name or account,
                location=found.location or "",
                dedicated_core_quota=props.dedicated_core_quota or 0,
                low_priority_core_quota=props.low_priority_core_quota or 0,
                per_family={
                    str(item.name): int(item.core_quota or 0) for item in props.dedicated_core_quota_per_vm_family or ()
                },
                per_family_enforced=bool(props.dedicated_core_quota_per_vm_family_enforced),
                pool_quota=props.pool_quota or 0,
            ),
            pools,
            skus,
        )


def _subscription_level(item: Mapping[str, Any]) -> bool:
    """Usages are listed per subscription, per workspace and per cluster; the quota is the first."""
    return "/resourceGroups/" not in str(item.get("id", "")) and "/resourcegroups/" not in str(item.get("id", ""))


def _aml_usage(item: Mapping[str, Any]) -> AmlUsage:
    kind = str(item.get("type", "")).rsplit("/", 2)[-2] if "/" in str(item.get("type", "")) else ""
    name = str((item.get("name") or {}).get("value", ""))
    tail = str(item.get("id", "")).rsplit("/", 1)[-1].lower()
    tier = ""
    for suffix, value in _USAGE_TAIL.items():
        if tail.endswith(suffix):
            tier, tail = value, tail[: -len(suffix)]
    return AmlUsage(
        scope=kind,
        name=name,
        key=family_key(tail) if tier else "",
        tier=tier,
        current=int(item.get("currentValue") or 0),
        limit=int(item.get("limit") or 0),
    )


def _text(value: Any) -> str:
    """An SDK enum's wire value (``str()`` of one gives its Python name)."""
    return str(getattr(value, "value", value) or "")


def _vcpus(capabilities: Iterable[Any]) -> int:
    values: Mapping[str, str] = {str(c.name): str(c.value) for c in capabilities}
    return int(values.get("vCPUs", "0") or 0)


def _pool(pool: Any) -> Pool:
    props = pool.properties
    scale = props.scale_settings
    auto = scale.auto_scale if scale else None
    fixed = scale.fixed_scale if scale else None
    resize = props.resize_operation_status
    run = props.auto_scale_run
    return Pool(
        name=str(pool.name),
        vm_size=str(props.vm_size or ""),
        allocation_state=_text(props.allocation_state) or "unknown",
        formula=auto.formula if auto else None,
        fixed_dedicated=(fixed.target_dedicated_nodes or 0) if fixed else 0,
        fixed_low_priority=(fixed.target_low_priority_nodes or 0) if fixed else 0,
        resize_errors=tuple((str(e.code), str(e.message)) for e in (resize.errors or ())) if resize else (),
        autoscale_error=(str(run.error.code), str(run.error.message)) if run and run.error else None,
    )
