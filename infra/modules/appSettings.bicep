// The ONE list of the Functions app's settings. Nothing else in infra/ emits an app setting.
//
// .github/scripts/check_drift.py reads this file and compares it with the settings the code
// declares (hastegeo.settings.load) and the variables .github/workflows/deploy.yml passes. Keep it
// easy to read for both people and that script:
//   - one `NAME: expression` per line inside the three objects at the end;
//   - an expression uses only this file's parameters and vars, string literals, `==`/`!=`,
//     `&&`/`||`, `cond ? a : b` and empty();
//   - a parameter that must never be empty carries @minLength(1) or @allowed([...]): the
//     check evaluates every expression for every value a parameter can take, and fails if a
//     setting the code needs (always, or in some AML_MODE) can come out empty.
// No keys, connection strings or listKeys() here: the app reaches everything with its identity.
//
// operatorSettings: chosen by the operator. main.bicepparam reads each from the environment
//   variable of the same name; deploy.yml maps each from the GitHub Environment.
// derivedSettings: values of resources this deployment creates; never read from the environment.
// platformSettings: read by the Functions host, not by hastegeo.

// ---- operator choices ----

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
@description('App setting BATCH_PROFILES (JSON, compute profiles on Batch; docs/profiles.md); empty: none declared.')
param batchProfiles string
@description('App setting AML_MODE; its meaning is in docs/deploy.md.')
@allowed([
  'Existing'
  'Create'
  'Disabled'
])
param amlMode string
@description('App setting AML_SUBSCRIPTION_ID, resolved by main.bicep (never empty).')
@minLength(1)
param amlSubscriptionId string
@description('App setting AML_RESOURCE_GROUP, resolved by main.bicep (never empty).')
@minLength(1)
param amlResourceGroup string
@description('App setting AML_WORKSPACE, resolved by main.bicep (never empty).')
@minLength(1)
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
// build_context is for the CLI on a workstation: the deployed app has no Docker build context.
@allowed([
  'image'
  'registered'
])
param amlEnvironmentSource string
@description('App setting AML_ENVIRONMENT; its meaning is in docs/deploy.md.')
@minLength(1)
param amlEnvironment string
@description('App setting AML_IMAGE; main.bicep fills in the registry\'s training image while Azure ML is enabled.')
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
@description('App setting AML_EXPERIMENT; its meaning is in docs/deploy.md.')
@minLength(1)
param amlExperiment string
@description('App setting AML_RETRY_ATTEMPTS; its meaning is in docs/deploy.md.')
@minLength(1)
param amlRetryAttempts string
@description('App setting AML_RETRY_DELAY_S; its meaning is in docs/deploy.md.')
@minLength(1)
param amlRetryDelayS string
@description('App setting AML_PROFILES (JSON, compute profiles on Azure ML; docs/profiles.md); empty: none declared.')
param amlProfiles string

// ---- values of resources this deployment creates (names and ids are never empty) ----

@minLength(3)
param storageAccountName string
@minLength(1)
param batchAccountUrl string
@minLength(1)
param batchPools string
@minLength(1)
param batchImages string
@minLength(1)
param registryLoginServer string
@minLength(1)
param poolIdentityId string
@minLength(1)
param appInsightsConnectionString string
@description('Client id of the app registration App Service authentication validates; the web console signs in with it.')
@minLength(1)
param authClientId string
@description('Tenant of that app registration.')
@minLength(1)
param authTenantId string
@description('Endpoint of the job-events Event Grid topic; empty when the operator did not enable it.')
param eventGridEndpoint string

var amlEnabled = amlMode != 'Disabled'

var operatorSettings = {
  HASTE_JOBS_CONTAINER: hasteJobsContainer
  HASTE_OUTPUTS_CONTAINER: hasteOutputsContainer
  HASTE_INPUTS_CONTAINER: hasteInputsContainer
  HASTE_BACKENDS_ENABLED: hasteBackendsEnabled
  HASTE_DEFAULT_BACKEND: hasteDefaultBackend
  HASTE_BACKEND_WEIGHTS: hasteBackendWeights
  HASTE_POLL_INITIAL_S: hastePollInitialS
  HASTE_POLL_MAX_S: hastePollMaxS
  HASTE_POLL_BACKOFF: hastePollBackoff
  HASTE_QUEUED_DEADLINE_S: hasteQueuedDeadlineS
  HASTE_RUN_DEADLINE_S: hasteRunDeadlineS
  HASTE_HISTORY_LIMIT: hasteHistoryLimit
  HASTE_MAX_BODY_BYTES: hasteMaxBodyBytes
  HASTE_SUBMIT_RATE_PER_S: hasteSubmitRatePerS
  HASTE_SUBMIT_BURST: hasteSubmitBurst
  HASTE_CORS_ALLOWED_ORIGINS: hasteCorsAllowedOrigins
  HASTE_CHECKPOINT_INTERVAL_S: hasteCheckpointIntervalS
  HASTE_HTTP_AUTH_LEVEL: hasteHttpAuthLevel
  HASTE_PROJECT_GROUPS: hasteProjectGroups
  HASTE_LOCAL_ALLOW_IN_AZURE: hasteLocalAllowInAzure
  HASTE_AZURE_BATCH_QUEUE_LIMIT_S: hasteAzureBatchQueueLimitS
  HASTE_AZURE_ML_QUEUE_LIMIT_S: hasteAzureMlQueueLimitS
  BATCH_POLL_MAX_S: batchPollMaxS
  AML_POLL_MAX_S: amlPollMaxS
  HASTE_PROJECT_MAX_RUNNING_PER_BACKEND: hasteProjectMaxRunningPerBackend
  HASTE_PROJECT_MAX_RUNNING: hasteProjectMaxRunning
  HASTE_BACKEND_MAX_RUNNING: hasteBackendMaxRunning
  HASTE_OTEL_EXPORT: hasteOtelExport
  HASTE_PRICES_BLOB: hastePricesBlob // empty: the price table shipped with the app (docs/operations.md)
  HASTE_BUDGET_ACTION: hasteBudgetAction
  HASTE_PROJECT_BUDGETS: hasteProjectBudgets
  HASTE_BUDGET_WARN_PERCENT: hasteBudgetWarnPercent
  BATCH_RETENTION_S: batchRetentionS
  BATCH_REQUEST_TIMEOUT_S: batchRequestTimeoutS
  BATCH_RETRY_ATTEMPTS: batchRetryAttempts
  BATCH_RETRY_BACKOFF_S: batchRetryBackoffS
  BATCH_RETRY_MAX_WAIT_S: batchRetryMaxWaitS
  BATCH_TERMINATE_WAIT_S: batchTerminateWaitS
  BATCH_PROFILES: batchProfiles // empty: every workload runs on its BATCH_POOLS pool only
  AML_MODE: amlMode
  AML_SUBSCRIPTION_ID: amlEnabled ? amlSubscriptionId : ''
  AML_RESOURCE_GROUP: amlEnabled ? amlResourceGroup : ''
  AML_WORKSPACE: amlEnabled ? amlWorkspace : ''
  AML_IDENTITY_MODE: amlIdentityMode
  AML_COMPUTE: amlCompute
  AML_ENVIRONMENT_SOURCE: amlEnvironmentSource
  AML_ENVIRONMENT: amlEnvironment
  AML_IMAGE: amlImage
  AML_BUILD_CONTEXT: amlBuildContext
  AML_DOCKERFILE: amlDockerfile
  AML_CODE_DIR: amlCodeDir
  AML_DATASTORES: amlDatastores
  AML_EXPERIMENT: amlExperiment
  AML_RETRY_ATTEMPTS: amlRetryAttempts
  AML_RETRY_DELAY_S: amlRetryDelayS
  AML_PROFILES: amlProfiles // empty: every workload runs on its AML_COMPUTE compute only
}

var derivedSettings = {
  HASTE_AUTH_MODE: 'app_service' // never none in Azure: callers are known (docs/adr/0007)
  AzureWebJobsStorage__accountName: storageAccountName
  HASTE_AUTH_CLIENT_ID: authClientId // the web console's sign-in (docs/adr/0014)
  HASTE_AUTH_TENANT_ID: authTenantId
  BATCH_ACCOUNT_URL: batchAccountUrl
  BATCH_AUTH_MODE: 'managed_identity'
  BATCH_CLIENT_ID: '' // the app calls Batch with its system-assigned identity
  BATCH_POOLS: batchPools
  BATCH_IMAGES: batchImages
  BATCH_REGISTRY: registryLoginServer
  BATCH_IDENTITY_RESOURCE_ID: poolIdentityId
  BATCH_REGION: '' // read from BATCH_ACCOUNT_URL (<account>.<region>.batch.azure.com)
  AML_MANAGED_IDENTITY_CLIENT_ID: '' // the app calls Azure ML with its system-assigned identity
  AML_REGION: '' // each cluster reports its own location
  HASTE_EVENTGRID_ENDPOINT: eventGridEndpoint // empty: the jobs-events queue only (docs/events.md)
}

var platformSettings = {
  APPLICATIONINSIGHTS_CONNECTION_STRING: appInsightsConnectionString
  APPLICATIONINSIGHTS_AUTHENTICATION_STRING: 'Authorization=AAD'
  // Every job traced, whole (docs/operations.md#sampling): unset, the Azure Monitor distro keeps
  // 5 traces per second and a burst's jobs vanish from the "stuck jobs" query.
  OTEL_TRACES_SAMPLER: 'parentbased_always_on'
}

@description('Every app setting of the Functions app, name to value.')
output settings object = union(platformSettings, derivedSettings, operatorSettings)
