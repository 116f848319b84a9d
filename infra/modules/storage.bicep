// The storage account of the pipeline: job documents, inputs, outputs, the job queues and
// their poison queues, and the Functions host's own state. Shared-key access is disabled,
// so everything reaches it with an Entra identity; TLS 1.2 minimum; blob and container
// soft delete keep an accidental delete recoverable.

param location string
param tags object
@minLength(3)
@maxLength(24)
param name string
param jobsContainer string
param outputsContainer string
param inputsContainer string
@description('Days a deleted blob or container can be restored.')
param softDeleteDays int = 7
@description('Origins whose pages may read blobs with a signed read URL (GET/HEAD): the web console (docs/adr/0014).')
param browserReadOrigins array = []

// The queue names are fixed by the Functions code (api/): the HTTP trigger enqueues to
// jobs-submit; upstream services drop requests on jobs-requests; the host moves a message
// to <queue>-poison after maxDequeueCount failures. jobs-events carries the job events to
// consumers outside the app (docs/events.md); no trigger reads it. groups-make carries the
// chunks of a job group's items to make or cancel (ADR 0040), groups-submit their items' first submit messages. provider-events receives Azure ML's
// run events from the workspace's Event Grid subscription (amlEvents.bicep, ADR 0048).
var queues = [
  'jobs-submit'
  'jobs-poll'
  'jobs-requests'
  'groups-make'
  'groups-submit'
  'provider-events'
  'jobs-events'
  'jobs-submit-poison'
  'jobs-poll-poison'
  'jobs-requests-poison'
  'groups-make-poison'
  'groups-submit-poison'
  'provider-events-poison'
]
// Flex Consumption reads the app package from this container.
var deploymentContainer = 'app-package'

resource account 'Microsoft.Storage/storageAccounts@2023-05-01' = {
  name: name
  location: location
  tags: tags
  kind: 'StorageV2'
  sku: {
    name: 'Standard_LRS'
  }
  properties: {
    allowSharedKeyAccess: false
    defaultToOAuthAuthentication: true
    allowBlobPublicAccess: false
    minimumTlsVersion: 'TLS1_2'
    supportsHttpsTrafficOnly: true
    accessTier: 'Hot'
    publicNetworkAccess: 'Enabled'
  }
}

resource blobs 'Microsoft.Storage/storageAccounts/blobServices@2023-05-01' = {
  parent: account
  name: 'default'
  properties: {
    deleteRetentionPolicy: {
      enabled: true
      days: softDeleteDays
    }
    containerDeleteRetentionPolicy: {
      enabled: true
      days: softDeleteDays
    }
    cors: {
      corsRules: empty(browserReadOrigins) ? [] : [
        {
          allowedOrigins: browserReadOrigins
          allowedMethods: [ 'GET', 'HEAD' ]
          allowedHeaders: [ '*' ]
          exposedHeaders: [ '*' ]
          maxAgeInSeconds: 600
        }
      ]
    }
  }
}

resource containers 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = [
  for container in [jobsContainer, outputsContainer, inputsContainer, deploymentContainer]: {
    parent: blobs
    name: container
    properties: {
      publicAccess: 'None'
    }
  }
]

resource queueService 'Microsoft.Storage/storageAccounts/queueServices@2023-05-01' = {
  parent: account
  name: 'default'
}

resource jobQueues 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = [
  for queue in queues: {
    parent: queueService
    name: queue
  }
]

output name string = account.name
output id string = account.id
output blobEndpoint string = account.properties.primaryEndpoints.blob
output deploymentContainer string = deploymentContainer
