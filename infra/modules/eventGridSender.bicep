// EventGrid Data Sender for the Functions app's identity, on the job-events topic only.

@minLength(3)
param topicName string
@description('Principal id of the Functions app (system-assigned identity).')
param principalId string

var eventGridDataSender = 'd5a91429-5739-47e2-a06b-3470a27159e7'

resource topic 'Microsoft.EventGrid/topics@2025-02-15' existing = {
  name: topicName
}

// Who: the Functions app. Why: it publishes each job state change to this topic (docs/events.md).
resource sender 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: topic
  name: guid(topic.id, principalId, eventGridDataSender)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', eventGridDataSender)
    principalId: principalId
    principalType: 'ServicePrincipal'
  }
}
