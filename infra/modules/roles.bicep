// Every role assignment in the environment's resource group, least privilege and scoped to
// the resource (or container) that needs it. No Owner, no Contributor, no keys.
// Existing-mode Azure ML access lives in amlAccess.bicep (another resource group).
// docs/deploy.md "Who may touch what" lists every identity against every resource it reads or
// writes; tests/infra/test_identity_table.py holds that table and these assignments together.
//
// Not here on purpose: the Create-mode workspace's system-assigned identity. Azure ML assigns
// that identity its roles on the workspace's storage account, key vault, registry and Application
// Insights itself when it creates the workspace; a second assignment of the same principal, role
// and scope under another name fails the deployment with RoleAssignmentExists (docs/adr/0036).

@description('Principal id of the Functions app (system-assigned identity).')
param functionPrincipalId string
@description('Principal id of the compute identity (Batch pools, Create-mode Azure ML clusters).')
param poolPrincipalId string
param storageAccountName string
param inputsContainer string
param outputsContainer string
@description('Object id of the Entra group that uploads job inputs; empty = no such grant.')
param inputsUploaderGroupId string
@description('Principal id of the upstream service identity that sends to jobs-requests; empty = no such grant.')
param upstreamSenderPrincipalId string
param registryName string
param batchAccountName string
param appInsightsName string
@description('Key Vault to grant read access on; empty when none is deployed.')
param keyVaultName string
@description('Create-mode workspace; empty in Existing and Disabled modes.')
param amlWorkspaceName string
@description('Existing mode: principal id of the managed identity of the workspace\'s compute clusters (their credential-less datastores fall back to it); empty = none.')
param amlComputePrincipalId string

var role = {
  storageBlobDataOwner: 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b'
  storageBlobDataContributor: 'ba92f5b4-2d11-453d-a403-e96b0029c9fe'
  storageBlobDataReader: '2a2b9908-6ea1-4ae2-8e65-a410df84e7d1'
  storageQueueDataContributor: '974c5e8b-45b9-4653-ba55-5f855dd0fb88'
  storageQueueDataMessageSender: 'c6a89b2d-59bc-44d0-9896-0f6e12d7b80a'
  acrPull: '7f951dda-4ed3-4680-a7ca-43fe172d538d'
  batchJobSubmitter: '48e5e92e-a480-4e71-aa9c-2778f4c13781'
  monitoringMetricsPublisher: '3913510d-42f4-4e42-8a64-420c390055eb'
  keyVaultSecretsUser: '4633458b-17de-408a-b874-0445c86b69e6'
  azureMLDataScientist: 'f6c7c914-8db3-469d-8ca1-694a8f32e121'
}

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: storageAccountName
}

resource blobService 'Microsoft.Storage/storageAccounts/blobServices@2023-05-01' existing = {
  parent: storage
  name: 'default'
}

resource inputs 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' existing = {
  parent: blobService
  name: inputsContainer
}

resource outputs 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' existing = {
  parent: blobService
  name: outputsContainer
}

resource queueService 'Microsoft.Storage/storageAccounts/queueServices@2023-05-01' existing = {
  parent: storage
  name: 'default'
}

// The queue upstream services drop job requests on (hastegeo.store.queues.REQUESTS_QUEUE).
resource requestsQueue 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' existing = {
  parent: queueService
  name: 'jobs-requests'
}

resource registry 'Microsoft.ContainerRegistry/registries@2023-07-01' existing = {
  name: registryName
}

resource batch 'Microsoft.Batch/batchAccounts@2025-06-01' existing = {
  name: batchAccountName
}

resource insights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: appInsightsName
}

resource vault 'Microsoft.KeyVault/vaults@2023-07-01' existing = if (!empty(keyVaultName)) {
  name: keyVaultName
}

resource workspace 'Microsoft.MachineLearningServices/workspaces@2024-10-01' existing = if (!empty(amlWorkspaceName)) {
  name: amlWorkspaceName
}

// Who: the Functions app. Why: the Functions host keeps its leases and keys in blobs of
// AzureWebJobsStorage and reads the Flex Consumption package; the pipeline reads and writes
// job documents, inputs and outputs. Microsoft documents Blob Data Owner for identity-based
// AzureWebJobsStorage.
resource appBlobOwner 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: storage
  name: guid(storage.id, functionPrincipalId, role.storageBlobDataOwner)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', role.storageBlobDataOwner)
    principalId: functionPrincipalId
    principalType: 'ServicePrincipal'
  }
}

// Who: the Functions app. Why: queue triggers read and delete messages of jobs-submit,
// jobs-poll, jobs-requests, groups-make, groups-submit and their poison queues; the API and triggers enqueue.
resource appQueueContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: storage
  name: guid(storage.id, functionPrincipalId, role.storageQueueDataContributor)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', role.storageQueueDataContributor)
    principalId: functionPrincipalId
    principalType: 'ServicePrincipal'
  }
}

// Who: the Functions app. Why: create, read, terminate and delete Batch jobs and tasks over
// Entra ID; Job Submitter cannot change pools or the account.
resource appBatchJobSubmitter 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: batch
  name: guid(batch.id, functionPrincipalId, role.batchJobSubmitter)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', role.batchJobSubmitter)
    principalId: functionPrincipalId
    principalType: 'ServicePrincipal'
  }
}

// Who: the Functions app. Why: send telemetry to Application Insights with Entra auth (local
// auth is disabled on the component).
resource appMetricsPublisher 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: insights
  name: guid(insights.id, functionPrincipalId, role.monitoringMetricsPublisher)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', role.monitoringMetricsPublisher)
    principalId: functionPrincipalId
    principalType: 'ServicePrincipal'
  }
}

// Who: the compute identity (Batch pool nodes, Azure ML clusters). Why: pull the compute
// images from the registry; pull only.
resource poolAcrPull 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: registry
  name: guid(registry.id, poolPrincipalId, role.acrPull)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', role.acrPull)
    principalId: poolPrincipalId
    principalType: 'ServicePrincipal'
  }
}

// Who: the compute identity. Why: tasks download their inputs; read-only, this container only.
resource poolInputsReader 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: inputs
  name: guid(inputs.id, poolPrincipalId, role.storageBlobDataReader)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', role.storageBlobDataReader)
    principalId: poolPrincipalId
    principalType: 'ServicePrincipal'
  }
}

// Who: the compute identity. Why: tasks upload outputs/** and logs/** when they end (this is
// how results survive the loss of a node); this container only.
resource poolOutputsContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: outputs
  name: guid(outputs.id, poolPrincipalId, role.storageBlobDataContributor)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', role.storageBlobDataContributor)
    principalId: poolPrincipalId
    principalType: 'ServicePrincipal'
  }
}

// Who: the Functions app, only when a Key Vault exists. Why: resolve Key Vault references in
// app settings for the rare secret that cannot be replaced by an identity; read secrets only.
resource appSecretsUser 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(keyVaultName)) {
  scope: vault
  name: guid(resourceGroup().id, keyVaultName, functionPrincipalId, role.keyVaultSecretsUser)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', role.keyVaultSecretsUser)
    principalId: functionPrincipalId
    principalType: 'ServicePrincipal'
  }
}

// Who: the Functions app, Create mode. Why: submit, read and cancel Azure ML command jobs and
// register Environments in this workspace; cannot change the workspace or its compute.
resource appDataScientist 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(amlWorkspaceName)) {
  scope: workspace
  name: guid(resourceGroup().id, amlWorkspaceName, functionPrincipalId, role.azureMLDataScientist)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', role.azureMLDataScientist)
    principalId: functionPrincipalId
    principalType: 'ServicePrincipal'
  }
}

// Who: the compute identity of the operator's workspace (Existing mode, DEPLOY_AML_COMPUTE_PRINCIPAL_ID).
// Why: the jobs' datastores carry no credentials, so Azure ML mounts them with the compute's managed
// identity: read the inputs container. (Create mode's clusters use the compute identity above.)
resource amlComputeInputsReader 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(amlComputePrincipalId)) {
  scope: inputs
  name: guid(inputs.id, amlComputePrincipalId, role.storageBlobDataReader)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', role.storageBlobDataReader)
    principalId: amlComputePrincipalId
    principalType: 'ServicePrincipal'
  }
}

// Who: the compute identity of the operator's workspace (Existing mode). Why: jobs write outputs/**
// and logs/** through the outputs datastore, mounted with that identity; this container only.
resource amlComputeOutputsContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(amlComputePrincipalId)) {
  scope: outputs
  name: guid(outputs.id, amlComputePrincipalId, role.storageBlobDataContributor)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', role.storageBlobDataContributor)
    principalId: amlComputePrincipalId
    principalType: 'ServicePrincipal'
  }
}

// Who: the compute identity of the operator's workspace (Existing mode). Why: the clusters pull the
// training image (AML_IMAGE) from this environment's registry; pull only.
resource amlComputeAcrPull 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(amlComputePrincipalId)) {
  scope: registry
  name: guid(registry.id, amlComputePrincipalId, role.acrPull)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', role.acrPull)
    principalId: amlComputePrincipalId
    principalType: 'ServicePrincipal'
  }
}

// Who: the Entra group named by DEPLOY_INPUTS_UPLOADER_GROUP_ID (people and tools that stage job
// inputs). Why: shared keys are off, so uploading needs a data role; this container only, and no
// access to job documents or outputs.
resource uploadersInputsContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(inputsUploaderGroupId)) {
  scope: inputs
  name: guid(inputs.id, inputsUploaderGroupId, role.storageBlobDataContributor)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', role.storageBlobDataContributor)
    principalId: inputsUploaderGroupId
    principalType: 'Group'
  }
}

// Who: the upstream service identity named by DEPLOY_UPSTREAM_SENDER_PRINCIPAL_ID. Why: it submits
// jobs by sending requests to jobs-requests; Message Sender can add messages to this queue only and
// cannot read, peek or delete any.
resource upstreamRequestsSender 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(upstreamSenderPrincipalId)) {
  scope: requestsQueue
  name: guid(requestsQueue.id, upstreamSenderPrincipalId, role.storageQueueDataMessageSender)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', role.storageQueueDataMessageSender)
    principalId: upstreamSenderPrincipalId
    principalType: 'ServicePrincipal'
  }
}
