// haste-compute: everything one environment needs, from an empty subscription.
//
// Deployed at subscription scope (it creates the resource group) by `azd up` or
// `az deployment sub create --location <region> --parameters infra/main.bicepparam`.
// Every parameter comes from main.bicepparam, which reads environment variables; the
// deploy workflow sets them from the GitHub Environment. App settings are emitted by
// modules/appSettings.bicep only. The Bicep compiler does not run in this repository's CI:
// .github/scripts/check_drift.py and tests/infra review these files statically.
targetScope = 'subscription'

// ---- deployment target and sizing (not app settings) ----

@description('Environment name (azd AZURE_ENV_NAME): prefixes every resource and names the resource group.')
@minLength(2)
@maxLength(16)
param environmentName string
@description('Azure region of every resource (azd AZURE_LOCATION).')
@minLength(1)
param location string
@description('Tag of the compute images (haste-geo, haste-train) the images workflow pushed.')
@minLength(1)
param imageTag string
@description('VM size of the Batch pools for imagery, embedding, artifacts and inference.')
param batchCpuVmSize string
@description('VM size of the Batch pool for training (a GPU size in production).')
param batchGpuVmSize string
@description('Most nodes one Batch pool may scale to.')
param batchMaxNodes string
@description('true: Batch pools use low-priority (spot) nodes, cheaper but preemptible.')
@allowed([
  'true'
  'false'
])
param batchLowPriority string
@description('What autoscale does with a running task when it removes a node: requeue, terminate or taskcompletion (retaineddata is gone from the Batch API 2026-08-01).')
@allowed([
  'requeue'
  'terminate'
  'taskcompletion'
])
param batchNodeDeallocation string
@description('E-mail address alerts go to (empty: none).')
param alertEmail string
@description('Webhook URL alerts go to, e.g. an incident tool (empty: none).')
@secure()
param alertWebhookUrl string
@description('Failed share of the jobs ended in the last hour, in percent, that raises the failure-rate alert.')
param alertFailureRatePercent string
@description('VM size of the Azure ML CPU cluster (Create mode).')
param amlCpuVmSize string
@description('VM size of the Azure ML GPU cluster (Create mode).')
param amlGpuVmSize string
@description('Most nodes one Azure ML cluster may scale to (Create mode).')
param amlMaxNodes string
@description('true: Azure ML clusters use low-priority nodes (Create mode).')
@allowed([
  'true'
  'false'
])
param amlLowPriority string
@description('true: create a Key Vault for secrets that cannot use an identity (Create mode makes one anyway).')
@allowed([
  'true'
  'false'
])
param keyVaultEnabled string
@description('true: the Key Vault of this environment is in the soft-deleted state (purge protection keeps it 90 days after a teardown): recover it under the same name instead of creating it.')
@allowed([
  'true'
  'false'
])
param keyVaultRecover string
@description('true: publish the job events to an Event Grid custom topic too (CloudEvents 1.0, identity-based), beside the jobs-events queue.')
@allowed([
  'true'
  'false'
])
param eventGridEnabled string
@description('Object id of the Entra group whose members upload job inputs (Storage Blob Data Contributor on the inputs container); empty = none.')
param inputsUploaderGroupId string
@description('Principal id of the upstream service identity that sends requests to jobs-requests (Storage Queue Data Message Sender on that queue); empty = none.')
param upstreamSenderPrincipalId string
@description('Existing mode: principal id of the managed identity of the workspace\'s compute clusters, given read on the inputs container, write on the outputs container and AcrPull on the registry; empty = none.')
param amlComputePrincipalId string

// ---- app settings chosen by the operator (passed through to modules/appSettings.bicep) ----

@description('App setting HASTE_JOBS_CONTAINER; its meaning is in docs/deploy.md.')
@minLength(1)
param hasteJobsContainer string
@description('App setting HASTE_OUTPUTS_CONTAINER; its meaning is in docs/deploy.md.')
@minLength(1)
param hasteOutputsContainer string
@description('App setting HASTE_INPUTS_CONTAINER; its meaning is in docs/deploy.md.')
@minLength(1)
param hasteInputsContainer string
@description('App setting HASTE_BACKENDS_ENABLED; its meaning is in docs/deploy.md.')
@minLength(1)
param hasteBackendsEnabled string
@description('App setting HASTE_DEFAULT_BACKEND; its meaning is in docs/deploy.md.')
@allowed([
  'auto'
  'local'
  'azure_batch'
  'azure_ml'
])
param hasteDefaultBackend string
@description('App setting HASTE_BACKEND_WEIGHTS; its meaning is in docs/deploy.md.')
param hasteBackendWeights string
@description('App setting HASTE_POLL_INITIAL_S; its meaning is in docs/deploy.md.')
@minLength(1)
param hastePollInitialS string
@description('App setting HASTE_POLL_MAX_S; its meaning is in docs/deploy.md.')
@minLength(1)
param hastePollMaxS string
@description('App setting HASTE_POLL_BACKOFF; its meaning is in docs/deploy.md.')
@minLength(1)
param hastePollBackoff string
@description('App setting HASTE_QUEUED_DEADLINE_S; its meaning is in docs/deploy.md.')
@minLength(1)
param hasteQueuedDeadlineS string
@description('App setting HASTE_RUN_DEADLINE_S; its meaning is in docs/deploy.md.')
@minLength(1)
param hasteRunDeadlineS string
@description('App setting HASTE_HISTORY_LIMIT; its meaning is in docs/deploy.md.')
@minLength(1)
param hasteHistoryLimit string
@description('App setting HASTE_MAX_BODY_BYTES; its meaning is in docs/deploy.md.')
@minLength(1)
param hasteMaxBodyBytes string
@description('App setting HASTE_SUBMIT_RATE_PER_S; its meaning is in docs/deploy.md.')
@minLength(1)
param hasteSubmitRatePerS string
@description('App setting HASTE_SUBMIT_BURST; its meaning is in docs/deploy.md.')
@minLength(1)
param hasteSubmitBurst string
@description('App setting HASTE_CORS_ALLOWED_ORIGINS; its meaning is in docs/deploy.md.')
param hasteCorsAllowedOrigins string
@description('App setting HASTE_CHECKPOINT_INTERVAL_S; its meaning is in docs/deploy.md.')
@minLength(1)
param hasteCheckpointIntervalS string
@description('App setting HASTE_HTTP_AUTH_LEVEL; its meaning is in docs/deploy.md.')
@allowed([
  'anonymous'
  'function'
])
param hasteHttpAuthLevel string
@description('Client id of the Entra app registration for App Service authentication (not an app setting).')
@minLength(1)
param authClientId string
@description('App setting HASTE_PROJECT_GROUPS; its meaning is in docs/deploy.md.')
param hasteProjectGroups string
@description('App setting HASTE_LOCAL_ALLOW_IN_AZURE; its meaning is in docs/deploy.md.')
@allowed([
  'true'
  'false'
])
param hasteLocalAllowInAzure string
@description('App setting HASTE_AZURE_BATCH_QUEUE_LIMIT_S; its meaning is in docs/deploy.md.')
@minLength(1)
param hasteAzureBatchQueueLimitS string
@description('App setting HASTE_AZURE_ML_QUEUE_LIMIT_S; its meaning is in docs/deploy.md.')
@minLength(1)
param hasteAzureMlQueueLimitS string
@description('App setting BATCH_POLL_MAX_S; its meaning is in docs/deploy.md.')
@minLength(1)
param batchPollMaxS string
@description('App setting AML_POLL_MAX_S; its meaning is in docs/deploy.md.')
@minLength(1)
param amlPollMaxS string
@description('App setting HASTE_PROJECT_MAX_RUNNING_PER_BACKEND; its meaning is in docs/deploy.md.')
param hasteProjectMaxRunningPerBackend string
@description('App setting HASTE_PROJECT_MAX_RUNNING; its meaning is in docs/deploy.md.')
@minLength(1)
param hasteProjectMaxRunning string
@description('App setting HASTE_BACKEND_MAX_RUNNING; its meaning is in docs/deploy.md.')
param hasteBackendMaxRunning string
@description('App setting HASTE_OTEL_EXPORT; its meaning is in docs/deploy.md.')
@minLength(1)
param hasteOtelExport string
@description('App setting HASTE_PRICES_BLOB; its meaning is in docs/deploy.md.')
param hastePricesBlob string
@description('App setting HASTE_BUDGET_ACTION; its meaning is in docs/deploy.md.')
@minLength(1)
param hasteBudgetAction string
@description('App setting HASTE_PROJECT_BUDGETS; its meaning is in docs/deploy.md.')
param hasteProjectBudgets string
@description('App setting HASTE_BUDGET_WARN_PERCENT; its meaning is in docs/deploy.md.')
@minLength(1)
param hasteBudgetWarnPercent string
@description('App setting BATCH_RETENTION_S; its meaning is in docs/deploy.md.')
@minLength(1)
param batchRetentionS string
@description('App setting BATCH_REQUEST_TIMEOUT_S; its meaning is in docs/deploy.md.')
@minLength(1)
param batchRequestTimeoutS string
@description('App setting BATCH_RETRY_ATTEMPTS; its meaning is in docs/deploy.md.')
@minLength(1)
param batchRetryAttempts string
@description('App setting BATCH_RETRY_BACKOFF_S; its meaning is in docs/deploy.md.')
@minLength(1)
param batchRetryBackoffS string
@description('App setting BATCH_RETRY_MAX_WAIT_S; its meaning is in docs/deploy.md.')
@minLength(1)
param batchRetryMaxWaitS string
@description('App setting BATCH_TERMINATE_WAIT_S; its meaning is in docs/deploy.md.')
@minLength(1)
param batchTerminateWaitS string
@description('App setting AML_MODE; its meaning is in docs/deploy.md.')
@allowed([
  'Existing'
  'Create'
  'Disabled'
])
param amlMode string
@description('App setting AML_SUBSCRIPTION_ID (Existing mode); empty = this deployment\'s subscription.')
param amlSubscriptionId string
@description('App setting AML_RESOURCE_GROUP (Existing mode); empty = this deployment\'s resource group.')
param amlResourceGroup string
@description('App setting AML_WORKSPACE; empty = the name Create mode gives the workspace.')
param amlWorkspace string
@description('App setting AML_IDENTITY_MODE; its meaning is in docs/deploy.md.')
@allowed([
  'managed_identity'
  'default'
])
param amlIdentityMode string
@description('App setting AML_COMPUTE; its meaning is in docs/deploy.md.')
@minLength(1)
param amlCompute string
@description('App setting AML_ENVIRONMENT_SOURCE; its meaning is in docs/deploy.md.')
@allowed([
  'image'
  'registered'
])
param amlEnvironmentSource string
@description('App setting AML_ENVIRONMENT; its meaning is in docs/deploy.md.')
@minLength(1)
param amlEnvironment string
@description('App setting AML_IMAGE; its meaning is in docs/deploy.md.')
param amlImage string
@description('App setting AML_BUILD_CONTEXT; its meaning is in docs/deploy.md.')
param amlBuildContext string
@description('App setting AML_DOCKERFILE; its meaning is in docs/deploy.md.')
@minLength(1)
param amlDockerfile string
@description('App setting AML_CODE_DIR; its meaning is in docs/deploy.md.')
param amlCodeDir string
@description('App setting AML_DATASTORES; its meaning is in docs/deploy.md.')
param amlDatastores string
@description('App setting BATCH_PROFILES (JSON); docs/profiles.md.')
param batchProfiles string
@description('App setting AML_PROFILES (JSON); docs/profiles.md.')
param amlProfiles string
@description('App setting AML_EXPERIMENT; its meaning is in docs/deploy.md.')
@minLength(1)
param amlExperiment string
@description('App setting AML_RETRY_ATTEMPTS; its meaning is in docs/deploy.md.')
@minLength(1)
param amlRetryAttempts string
@description('App setting AML_RETRY_DELAY_S; its meaning is in docs/deploy.md.')
@minLength(1)
param amlRetryDelayS string

// ---- names ----

var token = toLower(uniqueString(subscription().id, environmentName))
var tags = {
  'azd-env-name': environmentName
  application: 'haste-compute'
}
var storageAccountName = take('sthaste${token}', 24)
var registryName = take('crhaste${token}', 50)
var batchAccountName = take('bahaste${token}', 24)
var keyVaultName = take('kv-haste-${token}', 24)
var createKeyVault = keyVaultEnabled == 'true' || amlMode == 'Create'
var createEventGrid = eventGridEnabled == 'true'

// Workspace coordinates, never empty. Create mode makes the workspace in this deployment's
// subscription and resource group (AML_WORKSPACE may name it). Existing mode takes the
// operator's values and falls back to this subscription, this group and the Create-mode name.
var amlSubscription = amlMode == 'Create' || empty(amlSubscriptionId) ? subscription().subscriptionId : amlSubscriptionId
var amlGroup = amlMode == 'Create' || empty(amlResourceGroup) ? 'rg-${environmentName}' : amlResourceGroup
var amlWorkspaceName = empty(amlWorkspace) ? 'mlw-haste-${token}' : amlWorkspace
// The image jobs run in while Azure ML is enabled and AML_IMAGE is left empty: the training image the
// images step pushes to this environment's registry. Azure ML runs `python -m hastegeo.workloads.<w>`
// directly (not the image's entrypoint), and the training image holds the whole geospatial stack, so
// it runs all five workloads. Create mode also registers it as the Environment haste-runtime.
var amlRuntimeImage = '${registry.outputs.loginServer}/haste-train:${imageTag}'
var amlImageResolved = amlMode != 'Disabled' && empty(amlImage) ? amlRuntimeImage : amlImage

// One Batch pool per workload; the slim geospatial image runs imagery, embedding and artifacts,
// the training image runs training and inference.
var workloads = [
  { name: 'imagery', image: 'haste-geo', vmSize: batchCpuVmSize }
  { name: 'embedding', image: 'haste-geo', vmSize: batchCpuVmSize }
  { name: 'artifacts', image: 'haste-geo', vmSize: batchCpuVmSize }
  { name: 'training', image: 'haste-train', vmSize: batchGpuVmSize }
  { name: 'inference', image: 'haste-train', vmSize: batchCpuVmSize }
]

resource group 'Microsoft.Resources/resourceGroups@2024-03-01' = {
  name: 'rg-${environmentName}'
  location: location
  tags: tags
}

module monitoring 'modules/monitoring.bicep' = {
  name: 'monitoring'
  scope: group
  params: {
    location: location
    tags: tags
    name: 'haste-${token}'
  }
}

module observability 'modules/observability.bicep' = {
  name: 'observability'
  scope: group
  params: {
    location: location
    tags: tags
    name: 'haste-${token}'
    appInsightsId: monitoring.outputs.appInsightsId
    alertEmail: alertEmail
    alertWebhookUrl: alertWebhookUrl
    failureRatePercent: int(alertFailureRatePercent)
  }
}

module storage 'modules/storage.bicep' = {
  name: 'storage'
  scope: group
  params: {
    location: location
    tags: tags
    name: storageAccountName
    jobsContainer: hasteJobsContainer
    outputsContainer: hasteOutputsContainer
    inputsContainer: hasteInputsContainer
    // The console is served by the Functions app and draws charts from outputs it reads with signed URLs.
    browserReadOrigins: [ 'https://func-haste-${token}.azurewebsites.net' ]
  }
}

module registry 'modules/registry.bicep' = {
  name: 'registry'
  scope: group
  params: {
    location: location
    tags: tags
    name: registryName
  }
}

module poolIdentity 'modules/identity.bicep' = {
  name: 'poolIdentity'
  scope: group
  params: {
    location: location
    tags: tags
    name: 'id-haste-pool-${token}'
  }
}

module batch 'modules/batch.bicep' = {
  name: 'batch'
  scope: group
  params: {
    location: location
    tags: tags
    name: batchAccountName
    workloads: workloads
    imageTag: imageTag
    registryLoginServer: registry.outputs.loginServer
    poolIdentityId: poolIdentity.outputs.id
    maxNodes: int(batchMaxNodes)
    lowPriority: batchLowPriority == 'true'
    nodeDeallocation: batchNodeDeallocation
  }
}

module keyVault 'modules/keyVault.bicep' = if (createKeyVault) {
  name: 'keyVault'
  scope: group
  params: {
    location: location
    tags: tags
    name: keyVaultName
    recover: keyVaultRecover == 'true'
  }
}

module amlCreate 'modules/amlWorkspace.bicep' = if (amlMode == 'Create') {
  name: 'amlWorkspace'
  scope: group
  params: {
    location: location
    tags: tags
    name: amlWorkspaceName
    storageAccountName: storage.outputs.name
    outputsContainer: hasteOutputsContainer
    keyVaultName: keyVaultName
    inputsContainer: hasteInputsContainer
    appInsightsName: monitoring.outputs.appInsightsName
    registryName: registry.outputs.name
    computeIdentityId: poolIdentity.outputs.id
    cpuVmSize: amlCpuVmSize
    gpuVmSize: amlGpuVmSize
    maxNodes: int(amlMaxNodes)
    lowPriority: amlLowPriority == 'true'
    image: amlRuntimeImage
    imageTag: imageTag
  }
  dependsOn: [
    keyVault
  ]
}

module eventGrid 'modules/eventGrid.bicep' = if (createEventGrid) {
  name: 'eventGrid'
  scope: group
  params: {
    location: location
    tags: tags
    name: take('evgt-haste-${token}', 50)
  }
}

module appSettings 'modules/appSettings.bicep' = {
  name: 'appSettings'
  scope: group
  params: {
    hasteJobsContainer: hasteJobsContainer
    hasteOutputsContainer: hasteOutputsContainer
    hasteInputsContainer: hasteInputsContainer
    hasteBackendsEnabled: hasteBackendsEnabled
    hasteDefaultBackend: hasteDefaultBackend
    hasteBackendWeights: hasteBackendWeights
    hastePollInitialS: hastePollInitialS
    hastePollMaxS: hastePollMaxS
    hastePollBackoff: hastePollBackoff
    hasteQueuedDeadlineS: hasteQueuedDeadlineS
    hasteRunDeadlineS: hasteRunDeadlineS
    hasteHistoryLimit: hasteHistoryLimit
    hasteMaxBodyBytes: hasteMaxBodyBytes
    hasteSubmitRatePerS: hasteSubmitRatePerS
    hasteSubmitBurst: hasteSubmitBurst
    hasteCorsAllowedOrigins: hasteCorsAllowedOrigins
    hasteCheckpointIntervalS: hasteCheckpointIntervalS
    hasteHttpAuthLevel: hasteHttpAuthLevel
    hasteProjectGroups: hasteProjectGroups
    hasteLocalAllowInAzure: hasteLocalAllowInAzure
    hasteAzureBatchQueueLimitS: hasteAzureBatchQueueLimitS
    hasteAzureMlQueueLimitS: hasteAzureMlQueueLimitS
    batchPollMaxS: batchPollMaxS
    amlPollMaxS: amlPollMaxS
    hasteProjectMaxRunningPerBackend: hasteProjectMaxRunningPerBackend
    hasteProjectMaxRunning: hasteProjectMaxRunning
    hasteBackendMaxRunning: hasteBackendMaxRunning
    hasteOtelExport: hasteOtelExport
    hastePricesBlob: hastePricesBlob
    hasteBudgetAction: hasteBudgetAction
    hasteProjectBudgets: hasteProjectBudgets
    hasteBudgetWarnPercent: hasteBudgetWarnPercent
    batchRetentionS: batchRetentionS
    batchRequestTimeoutS: batchRequestTimeoutS
    batchRetryAttempts: batchRetryAttempts
    batchRetryBackoffS: batchRetryBackoffS
    batchRetryMaxWaitS: batchRetryMaxWaitS
    batchTerminateWaitS: batchTerminateWaitS
    amlMode: amlMode
    amlSubscriptionId: amlSubscription
    amlResourceGroup: amlGroup
    amlWorkspace: amlWorkspaceName
    amlIdentityMode: amlIdentityMode
    amlCompute: amlCompute
    amlEnvironmentSource: amlEnvironmentSource
    amlEnvironment: amlEnvironment
    amlImage: amlImageResolved
    amlBuildContext: amlBuildContext
    amlDockerfile: amlDockerfile
    amlCodeDir: amlCodeDir
    amlDatastores: amlDatastores
    batchProfiles: batchProfiles
    amlProfiles: amlProfiles
    amlExperiment: amlExperiment
    amlRetryAttempts: amlRetryAttempts
    amlRetryDelayS: amlRetryDelayS
    storageAccountName: storage.outputs.name
    batchAccountUrl: batch.outputs.accountUrl
    batchPools: batch.outputs.poolsSetting
    batchImages: batch.outputs.imagesSetting
    registryLoginServer: registry.outputs.loginServer
    poolIdentityId: poolIdentity.outputs.id
    appInsightsConnectionString: monitoring.outputs.appInsightsConnectionString
    authClientId: authClientId
    authTenantId: tenant().tenantId
    eventGridEndpoint: createEventGrid ? eventGrid.outputs.endpoint : ''
  }
}

module functions 'modules/functions.bicep' = {
  name: 'functions'
  scope: group
  params: {
    location: location
    tags: tags
    name: 'func-haste-${token}'
    storageAccountName: storage.outputs.name
    deploymentContainer: storage.outputs.deploymentContainer
    appSettings: appSettings.outputs.settings
    corsAllowedOrigins: empty(hasteCorsAllowedOrigins) ? [] : map(split(hasteCorsAllowedOrigins, ','), origin => trim(origin))
    authClientId: authClientId
  }
}

module roles 'modules/roles.bicep' = {
  name: 'roles'
  scope: group
  params: {
    functionPrincipalId: functions.outputs.principalId
    poolPrincipalId: poolIdentity.outputs.principalId
    storageAccountName: storage.outputs.name
    inputsContainer: hasteInputsContainer
    outputsContainer: hasteOutputsContainer
    inputsUploaderGroupId: inputsUploaderGroupId
    upstreamSenderPrincipalId: upstreamSenderPrincipalId
    registryName: registry.outputs.name
    batchAccountName: batch.outputs.name
    appInsightsName: monitoring.outputs.appInsightsName
    keyVaultName: createKeyVault ? keyVaultName : ''
    amlWorkspaceName: amlMode == 'Create' ? amlWorkspaceName : ''
    amlComputePrincipalId: amlMode == 'Existing' ? amlComputePrincipalId : ''
  }
}

module eventGridSender 'modules/eventGridSender.bicep' = if (createEventGrid) {
  name: 'eventGridSender'
  scope: group
  params: {
    topicName: createEventGrid ? eventGrid.outputs.name : ''
    principalId: functions.outputs.principalId
  }
}

// Create mode: the workspace's run events nudge the app to look at an ended job at once (ADR 0048).
// Existing mode leaves the workspace's subscriptions alone: docs/deploy.md says how to add one.
module amlEvents 'modules/amlEvents.bicep' = if (amlMode == 'Create') {
  name: 'amlEvents'
  scope: group
  params: {
    location: location
    tags: tags
    workspaceName: amlMode == 'Create' ? amlCreate.outputs.name : ''
    storageAccountName: storage.outputs.name
  }
}

// Existing mode: the workspace lives elsewhere; only a role on it is created, nothing else.
module amlExistingAccess 'modules/amlAccess.bicep' = if (amlMode == 'Existing') {
  name: 'amlExistingAccess'
  scope: resourceGroup(amlSubscription, amlGroup)
  params: {
    workspaceName: amlWorkspaceName
    principalId: functions.outputs.principalId
  }
}

output AZURE_LOCATION string = location
output AZURE_RESOURCE_GROUP string = group.name
output FUNCTION_APP_NAME string = functions.outputs.name
output FUNCTION_APP_URL string = functions.outputs.url
output AZURE_CONTAINER_REGISTRY_NAME string = registry.outputs.name
output AZURE_CONTAINER_REGISTRY_ENDPOINT string = registry.outputs.loginServer
output BATCH_ACCOUNT_NAME string = batch.outputs.name
// Read back by the azd hooks (infra/scripts) and the images workflow, whichever path deployed.
// DEPLOYED_* names on purpose: azd writes outputs into its environment, and an output named like a
// variable main.bicepparam reads would feed a resolved value back in as the next deploy's choice.
output DEPLOYED_IMAGE_TAG string = imageTag
output EVENT_GRID_TOPIC_NAME string = createEventGrid ? eventGrid.outputs.name : ''
output AZURE_KEY_VAULT_NAME string = createKeyVault ? keyVaultName : ''
output DEPLOYED_AML_MODE string = amlMode
output DEPLOYED_AML_SUBSCRIPTION_ID string = amlMode == 'Disabled' ? '' : amlSubscription
output DEPLOYED_AML_RESOURCE_GROUP string = amlMode == 'Disabled' ? '' : amlGroup
output DEPLOYED_AML_WORKSPACE string = amlMode == 'Disabled' ? '' : amlWorkspaceName
output DEPLOYED_AML_ENVIRONMENT string = amlEnvironment
output DEPLOYED_AML_IMAGE string = amlImageResolved
// The scope the CLI asks tokens for (HASTE_API_SCOPE) and the API's address (HASTE_API_URL).
output HASTE_API_SCOPE string = 'api://${authClientId}/.default'
output HASTE_API_URL string = functions.outputs.url
