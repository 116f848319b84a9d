"""What a deployment must hold for the app to work: the roles its identities need, and its app registration.

The role table mirrors the role assignments ``infra/modules/roles.bicep``, ``amlAccess.bicep`` and
``eventGridSender.bicep`` make for the Functions app and the compute identity; a test reads
those files and fails when the two differ, so this is not a second copy that can drift.
The app registration's role ids mirror ``infra/scripts/app-registration.sh`` the same way,
and the role values come from :class:`hastegeo.auth.Role`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hastegeo.auth import Role

Who = Literal["app", "compute"]
# Where a role is assigned, by the symbol roles.bicep uses for that resource.
Scope = Literal["storage", "inputs", "outputs", "batch", "registry", "insights", "vault", "workspace", "topic"]

# Built-in role definition ids, named as roles.bicep's `var role` names them.
ROLE_IDS: dict[str, str] = {
    "storageBlobDataOwner": "b7e6dc6d-f1e8-4753-8033-0f276bb0955b",
    "storageBlobDataContributor": "ba92f5b4-2d11-453d-a403-e96b0029c9fe",
    "storageBlobDataReader": "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1",
    "storageQueueDataContributor": "974c5e8b-45b9-4653-ba55-5f855dd0fb88",
    "acrPull": "7f951dda-4ed3-4680-a7ca-43fe172d538d",
    "batchJobSubmitter": "48e5e92e-a480-4e71-aa9c-2778f4c13781",
    "monitoringMetricsPublisher": "3913510d-42f4-4e42-8a64-420c390055eb",
    "keyVaultSecretsUser": "4633458b-17de-408a-b874-0445c86b69e6",
    "azureMLDataScientist": "f6c7c914-8db3-469d-8ca1-694a8f32e121",
    "eventGridDataSender": "d5a91429-5739-47e2-a06b-3470a27159e7",
}

# Display names, for the report and the fix (what `az role assignment create --role` accepts).
ROLE_NAMES: dict[str, str] = {
    "storageBlobDataOwner": "Storage Blob Data Owner",
    "storageBlobDataContributor": "Storage Blob Data Contributor",
    "storageBlobDataReader": "Storage Blob Data Reader",
    "storageQueueDataContributor": "Storage Queue Data Contributor",
    "acrPull": "AcrPull",
    "batchJobSubmitter": "Azure Batch Job Submitter",
    "monitoringMetricsPublisher": "Monitoring Metrics Publisher",
    "keyVaultSecretsUser": "Key Vault Secrets User",
    "azureMLDataScientist": "AzureML Data Scientist",
    "eventGridDataSender": "EventGrid Data Sender",
}

# A role whose permissions include another's also satisfies it (blob data roles nest).
SATISFIED_BY: dict[str, tuple[str, ...]] = {
    "storageBlobDataReader": ("storageBlobDataContributor", "storageBlobDataOwner"),
    "storageBlobDataContributor": ("storageBlobDataOwner",),
}


@dataclass(frozen=True)
class RoleNeed:
    who: Who
    role: str  # a key of ROLE_IDS
    scope: Scope
    why: str

    @property
    def role_id(self) -> str:
        return ROLE_IDS[self.role]

    @property
    def role_name(self) -> str:
        return ROLE_NAMES[self.role]

    def accepted_ids(self) -> frozenset[str]:
        """Role definition ids any of which meets this need."""
        return frozenset(ROLE_IDS[name] for name in (self.role, *SATISFIED_BY.get(self.role, ())))


ROLE_NEEDS: tuple[RoleNeed, ...] = (
    RoleNeed("app", "storageBlobDataOwner", "storage", "host leases, the Flex package, job documents and outputs"),
    RoleNeed("app", "storageQueueDataContributor", "storage", "the job queues"),
    RoleNeed("app", "batchJobSubmitter", "batch", "submit, read and terminate Batch jobs"),
    RoleNeed("app", "monitoringMetricsPublisher", "insights", "send telemetry with Entra auth"),
    RoleNeed("app", "keyVaultSecretsUser", "vault", "resolve Key Vault references"),
    RoleNeed("app", "azureMLDataScientist", "workspace", "submit and read Azure ML jobs"),
    RoleNeed("app", "eventGridDataSender", "topic", "publish the job events to the Event Grid topic"),
    RoleNeed("compute", "acrPull", "registry", "pull the compute images"),
    RoleNeed("compute", "storageBlobDataReader", "inputs", "download job inputs"),
    RoleNeed("compute", "storageBlobDataContributor", "outputs", "upload outputs and logs"),
)

# The app registration (infra/scripts/app-registration.sh): app role ids are fixed there.
APP_ROLE_IDS: dict[Role, str] = {
    Role.READER: "6b0e1b0a-2b53-4f1e-9a51-3c1f0c5a7d01",
    Role.SUBMITTER: "6b0e1b0a-2b53-4f1e-9a51-3c1f0c5a7d02",
    Role.ADMIN: "6b0e1b0a-2b53-4f1e-9a51-3c1f0c5a7d03",
}
API_SCOPE = "user_impersonation"
# groupMembershipClaims per app-registration.sh --groups-claim: with Entra ID P1 the project groups
# are assigned to the app (ApplicationGroup); without it every security group is in the token.
GROUP_CLAIMS = {"application": "ApplicationGroup", "security": "SecurityGroup"}
CONSOLE_PATH = "/api/console/"
