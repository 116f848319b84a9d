// Log Analytics workspace and workspace-based Application Insights for the Functions app.
// Local (key) authentication of telemetry ingestion is off: the app sends with its identity
// (APPLICATIONINSIGHTS_AUTHENTICATION_STRING=Authorization=AAD, role in roles.bicep).

param location string
param tags object
@description('Name stem; the workspace and component get it with their own prefix.')
param name string
@description('Days logs are kept.')
param retentionInDays int = 30

resource logs 'Microsoft.OperationalInsights/workspaces@2023-09-01' = {
  name: 'log-${name}'
  location: location
  tags: tags
  properties: {
    sku: {
      name: 'PerGB2018'
    }
    retentionInDays: retentionInDays
  }
}

resource insights 'Microsoft.Insights/components@2020-02-02' = {
  name: 'appi-${name}'
  location: location
  tags: tags
  kind: 'web'
  properties: {
    Application_Type: 'web'
    WorkspaceResourceId: logs.id
    DisableLocalAuth: true
  }
}

output appInsightsName string = insights.name
output appInsightsId string = insights.id
// The connection string only locates the component; with local auth disabled it grants nothing.
output appInsightsConnectionString string = insights.properties.ConnectionString
output logAnalyticsId string = logs.id
