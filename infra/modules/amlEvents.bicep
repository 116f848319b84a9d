// Azure ML's own run events, nudging the pipeline (ADR 0048). Create mode only: the
// workspace's Event Grid system topic, subscribed to the provider-events queue, which the
// app's provider_events trigger reads. An event only makes the app look at the job now;
// the poll chain still follows every job, so a lost or late event costs time, not a job.
//
// Delivery uses the system topic's own identity (the storage account allows no shared key),
// with Storage Queue Data Message Sender on that one queue.

param location string
param tags object
param workspaceName string
param storageAccountName string
@description('The queue the app reads providers\' events from (hastegeo.store.queues.PROVIDER_EVENTS_QUEUE).')
param queueName string = 'provider-events'

var storageQueueDataMessageSender = 'c6a89b2d-59bc-44d0-9896-0f6e12d7b80a'

resource workspace 'Microsoft.MachineLearningServices/workspaces@2024-10-01' existing = {
  name: workspaceName
}

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: storageAccountName
}

resource queueService 'Microsoft.Storage/storageAccounts/queueServices@2023-05-01' existing = {
  parent: storage
  name: 'default'
}

resource queue 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' existing = {
  parent: queueService
  name: queueName
}

resource topic 'Microsoft.EventGrid/systemTopics@2025-02-15' = {
  name: take('evgst-${workspaceName}', 50)
  location: location
  tags: tags
  identity: {
    type: 'SystemAssigned'
  }
  properties: {
    source: workspace.id
    topicType: 'Microsoft.MachineLearningServices.Workspaces'
  }
}

var topicPrincipalId = topic.identity.principalId

// Who: the system topic. Why: it writes the workspace's run events to this one queue.
resource sender 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: queue
  name: guid(queue.id, topic.id, storageQueueDataMessageSender)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageQueueDataMessageSender)
    principalId: topicPrincipalId
    principalType: 'ServicePrincipal'
  }
}

// RunCompleted carries no status; RunStatusChanged does, and only the statuses that end a run are
// sent (the app ignores the others anyway: this spares the queue a message per status change).
var subscriptions = [
  {
    name: 'haste-run-completed'
    eventType: 'Microsoft.MachineLearningServices.RunCompleted'
    advancedFilters: []
  }
  {
    name: 'haste-run-ended'
    eventType: 'Microsoft.MachineLearningServices.RunStatusChanged'
    advancedFilters: [
      {
        key: 'data.runStatus'
        operatorType: 'StringIn'
        values: [
          'Completed'
          'Failed'
          'Canceled'
        ]
      }
    ]
  }
]

resource runs 'Microsoft.EventGrid/systemTopics/eventSubscriptions@2025-02-15' = [
  for subscription in subscriptions: {
    parent: topic
    name: subscription.name
    properties: {
      eventDeliverySchema: 'EventGridSchema'
      filter: {
        includedEventTypes: [
          subscription.eventType
        ]
        advancedFilters: subscription.advancedFilters
      }
      deliveryWithResourceIdentity: {
        identity: {
          type: 'SystemAssigned'
        }
        destination: {
          endpointType: 'StorageQueue'
          properties: {
            resourceId: storage.id
            queueName: queueName
            // An event older than the longest poll delay (10 min) tells the app nothing its poll chain has not.
            queueMessageTimeToLiveInSeconds: 600
          }
        }
      }
      retryPolicy: {
        maxDeliveryAttempts: 10
        eventTimeToLiveInMinutes: 10
      }
    }
    dependsOn: [
      sender
    ]
  }
]

output systemTopicName string = topic.name
