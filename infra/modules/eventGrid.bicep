// The Event Grid custom topic that receives the job events (docs/events.md), when the operator
// opts in (DEPLOY_EVENT_GRID=true). CloudEvents 1.0 input schema, as the app publishes; local
// (key) auth disabled: the app publishes with its managed identity, which
// eventGridSender.bicep gives the EventGrid Data Sender role on this topic alone.

param location string
param tags object
@minLength(3)
param name string

resource topic 'Microsoft.EventGrid/topics@2025-02-15' = {
  name: name
  location: location
  tags: tags
  properties: {
    inputSchema: 'CloudEventSchemaV1_0'
    disableLocalAuth: true
    publicNetworkAccess: 'Enabled'
    minimumTlsVersionAllowed: '1.2'
  }
}

output name string = topic.name
@description('The endpoint the app posts events to (HASTE_EVENTGRID_ENDPOINT).')
output endpoint string = topic.properties.endpoint
