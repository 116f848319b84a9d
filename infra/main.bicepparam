// Every value comes from an environment variable of the same name as the app setting it
// becomes (or AZURE_*/DEPLOY_* for the deployment itself): `azd env set NAME value` for azd,
// the GitHub Environment's variables for .github/workflows/deploy.yml (which maps each one).
// The second argument is the default and equals the code's default (or its deploy default:
// HASTE_BACKENDS_ENABLED is azure_batch in Azure, local on a workstation); the drift check
// (.github/scripts/check_drift.py) fails if they differ or if a variable is missing anywhere.
using 'main.bicep'

// ---- deployment target and sizing ----
param environmentName = readEnvironmentVariable('AZURE_ENV_NAME', 'haste')
param location = readEnvironmentVariable('AZURE_LOCATION', 'westeurope')
param imageTag = readEnvironmentVariable('DEPLOY_IMAGE_TAG', '1')
param alertEmail = readEnvironmentVariable('DEPLOY_ALERT_EMAIL', '')
param alertWebhookUrl = readEnvironmentVariable('DEPLOY_ALERT_WEBHOOK_URL', '')
param alertFailureRatePercent = readEnvironmentVariable('DEPLOY_ALERT_FAILURE_RATE_PERCENT', '20')
// The Entra app registration App Service authentication validates callers' tokens for.
param authClientId = readEnvironmentVariable('DEPLOY_AUTH_CLIENT_ID', '')
param batchCpuVmSize = readEnvironmentVariable('DEPLOY_BATCH_CPU_VM_SIZE', 'Standard_D4s_v5')
param batchGpuVmSize = readEnvironmentVariable('DEPLOY_BATCH_GPU_VM_SIZE', 'Standard_NC4as_T4_v3')
param batchMaxNodes = readEnvironmentVariable('DEPLOY_BATCH_MAX_NODES', '4')
param batchLowPriority = readEnvironmentVariable('DEPLOY_BATCH_LOW_PRIORITY', 'false')
param batchNodeDeallocation = readEnvironmentVariable('DEPLOY_BATCH_NODE_DEALLOCATION', 'taskcompletion')
param amlCpuVmSize = readEnvironmentVariable('DEPLOY_AML_CPU_VM_SIZE', 'Standard_D4s_v5')
param amlGpuVmSize = readEnvironmentVariable('DEPLOY_AML_GPU_VM_SIZE', 'Standard_NC4as_T4_v3')
param amlMaxNodes = readEnvironmentVariable('DEPLOY_AML_MAX_NODES', '2')
param amlLowPriority = readEnvironmentVariable('DEPLOY_AML_LOW_PRIORITY', 'false')
param keyVaultEnabled = readEnvironmentVariable('DEPLOY_KEY_VAULT', 'false')
// After a teardown the purge-protected vault stays soft-deleted under its name: 'true' recovers it.
param keyVaultRecover = readEnvironmentVariable('DEPLOY_KEY_VAULT_RECOVER', 'false')
// 'true': the job events go to an Event Grid topic too (docs/events.md).
param eventGridEnabled = readEnvironmentVariable('DEPLOY_EVENT_GRID', 'false')
// Who may upload inputs (an Entra group's object id) and which upstream identity may send to
// jobs-requests (a principal id); empty grants nothing.
param inputsUploaderGroupId = readEnvironmentVariable('DEPLOY_INPUTS_UPLOADER_GROUP_ID', '')
param upstreamSenderPrincipalId = readEnvironmentVariable('DEPLOY_UPSTREAM_SENDER_PRINCIPAL_ID', '')
// Existing Azure ML mode: the managed identity of your workspace's compute clusters (principal id).
param amlComputePrincipalId = readEnvironmentVariable('DEPLOY_AML_COMPUTE_PRINCIPAL_ID', '')

// ---- app settings chosen by the operator ----
param hasteJobsContainer = readEnvironmentVariable('HASTE_JOBS_CONTAINER', 'haste-jobs')
param hasteOutputsContainer = readEnvironmentVariable('HASTE_OUTPUTS_CONTAINER', 'haste-outputs')
param hasteInputsContainer = readEnvironmentVariable('HASTE_INPUTS_CONTAINER', 'haste-inputs')
param hasteBackendsEnabled = readEnvironmentVariable('HASTE_BACKENDS_ENABLED', 'azure_batch')
param hasteDefaultBackend = readEnvironmentVariable('HASTE_DEFAULT_BACKEND', 'auto')
param hasteBackendWeights = readEnvironmentVariable('HASTE_BACKEND_WEIGHTS', '')
param hastePollInitialS = readEnvironmentVariable('HASTE_POLL_INITIAL_S', '2.0')
param hastePollMaxS = readEnvironmentVariable('HASTE_POLL_MAX_S', '60.0')
param hastePollBackoff = readEnvironmentVariable('HASTE_POLL_BACKOFF', '1.5')
param hasteQueuedDeadlineS = readEnvironmentVariable('HASTE_QUEUED_DEADLINE_S', '3600')
param hasteRunDeadlineS = readEnvironmentVariable('HASTE_RUN_DEADLINE_S', '86400')
param hasteHistoryLimit = readEnvironmentVariable('HASTE_HISTORY_LIMIT', '200')
param hasteMaxBodyBytes = readEnvironmentVariable('HASTE_MAX_BODY_BYTES', '262144')
param hasteSubmitRatePerS = readEnvironmentVariable('HASTE_SUBMIT_RATE_PER_S', '0')
param hasteSubmitBurst = readEnvironmentVariable('HASTE_SUBMIT_BURST', '200')
param hasteCorsAllowedOrigins = readEnvironmentVariable('HASTE_CORS_ALLOWED_ORIGINS', '')
param hasteHttpAuthLevel = readEnvironmentVariable('HASTE_HTTP_AUTH_LEVEL', 'anonymous')
param hasteProjectGroups = readEnvironmentVariable('HASTE_PROJECT_GROUPS', '')
param hasteLocalAllowInAzure = readEnvironmentVariable('HASTE_LOCAL_ALLOW_IN_AZURE', 'false')
param hasteAzureBatchQueueLimitS = readEnvironmentVariable('HASTE_AZURE_BATCH_QUEUE_LIMIT_S', '1800')
param hasteAzureMlQueueLimitS = readEnvironmentVariable('HASTE_AZURE_ML_QUEUE_LIMIT_S', '3600')
param batchPollMaxS = readEnvironmentVariable('BATCH_POLL_MAX_S', '600')
param amlPollMaxS = readEnvironmentVariable('AML_POLL_MAX_S', '600')
param hasteProjectMaxRunningPerBackend = readEnvironmentVariable('HASTE_PROJECT_MAX_RUNNING_PER_BACKEND', '')
param hasteProjectMaxRunning = readEnvironmentVariable('HASTE_PROJECT_MAX_RUNNING', '0')
param hasteBackendMaxRunning = readEnvironmentVariable('HASTE_BACKEND_MAX_RUNNING', '')
param hasteOtelExport = readEnvironmentVariable('HASTE_OTEL_EXPORT', 'azure')
param hastePricesBlob = readEnvironmentVariable('HASTE_PRICES_BLOB', '')
param batchRetentionS = readEnvironmentVariable('BATCH_RETENTION_S', '86400')
param batchRequestTimeoutS = readEnvironmentVariable('BATCH_REQUEST_TIMEOUT_S', '30.0')
param batchRetryAttempts = readEnvironmentVariable('BATCH_RETRY_ATTEMPTS', '4')
param batchRetryBackoffS = readEnvironmentVariable('BATCH_RETRY_BACKOFF_S', '1.0')
param batchRetryMaxWaitS = readEnvironmentVariable('BATCH_RETRY_MAX_WAIT_S', '20.0')
param batchTerminateWaitS = readEnvironmentVariable('BATCH_TERMINATE_WAIT_S', '5.0')
param amlMode = readEnvironmentVariable('AML_MODE', 'Disabled')
param amlSubscriptionId = readEnvironmentVariable('AML_SUBSCRIPTION_ID', '')
param amlResourceGroup = readEnvironmentVariable('AML_RESOURCE_GROUP', '')
param amlWorkspace = readEnvironmentVariable('AML_WORKSPACE', '')
param amlIdentityMode = readEnvironmentVariable('AML_IDENTITY_MODE', 'managed_identity')
param amlCompute = readEnvironmentVariable('AML_COMPUTE', 'imagery=haste-cpu,training=haste-gpu,inference=haste-cpu,embedding=haste-cpu,artifacts=haste-cpu')
param amlEnvironmentSource = readEnvironmentVariable('AML_ENVIRONMENT_SOURCE', 'image')
param amlEnvironment = readEnvironmentVariable('AML_ENVIRONMENT', 'haste-runtime@latest')
param amlImage = readEnvironmentVariable('AML_IMAGE', '')
param amlBuildContext = readEnvironmentVariable('AML_BUILD_CONTEXT', '')
param amlDockerfile = readEnvironmentVariable('AML_DOCKERFILE', 'Dockerfile')
param amlCodeDir = readEnvironmentVariable('AML_CODE_DIR', '')
param amlDatastores = readEnvironmentVariable('AML_DATASTORES', '')
param amlExperiment = readEnvironmentVariable('AML_EXPERIMENT', 'haste')
param amlRetryAttempts = readEnvironmentVariable('AML_RETRY_ATTEMPTS', '3')
param amlRetryDelayS = readEnvironmentVariable('AML_RETRY_DELAY_S', '1.0')
