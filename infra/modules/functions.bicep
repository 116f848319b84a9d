// The Functions app: Flex Consumption, Linux, Python 3.11, system-assigned identity.
// Every app setting comes from the one list in appSettings.bicep (passed in as `appSettings`);
// this module adds none of its own. CORS comes from HASTE_CORS_ALLOWED_ORIGINS.

param location string
param tags object
param name string
param storageAccountName string
@description('Blob container the Flex Consumption host reads the app package from.')
param deploymentContainer string
@description('Every app setting, name to value: the output of appSettings.bicep.')
param appSettings object
@description('Origins allowed to call the API from a browser (the web UI).')
param corsAllowedOrigins array
@description('Most instances the app scales out to.')
param maximumInstanceCount int = 40
@allowed([
  2048
  4096
])
param instanceMemoryMB int = 2048
@description('Client id of the Entra app registration callers get tokens for (App Service authentication).')
@minLength(1)
param authClientId string
@description('Tenant of that app registration.')
param authTenantId string = tenant().tenantId

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: storageAccountName
}

resource plan 'Microsoft.Web/serverfarms@2024-04-01' = {
  name: 'plan-${name}'
  location: location
  tags: tags
  kind: 'functionapp'
  sku: {
    tier: 'FlexConsumption'
    name: 'FC1'
  }
  properties: {
    reserved: true
  }
}

resource app 'Microsoft.Web/sites@2024-04-01' = {
  name: name
  location: location
  tags: union(tags, { 'azd-service-name': 'api' })
  kind: 'functionapp,linux'
  identity: {
    type: 'SystemAssigned'
  }
  properties: {
    serverFarmId: plan.id
    httpsOnly: true
    siteConfig: {
      minTlsVersion: '1.2'
      ftpsState: 'Disabled'
      cors: {
        allowedOrigins: corsAllowedOrigins
        supportCredentials: false
      }
      appSettings: [
        for setting in items(appSettings): {
          name: setting.key
          value: setting.value
        }
      ]
    }
    functionAppConfig: {
      deployment: {
        storage: {
          type: 'blobContainer'
          value: '${storage.properties.primaryEndpoints.blob}${deploymentContainer}'
          authentication: {
            type: 'SystemAssignedIdentity'
          }
        }
      }
      scaleAndConcurrency: {
        maximumInstanceCount: maximumInstanceCount
        instanceMemoryMB: instanceMemoryMB
      }
      runtime: {
        name: 'python'
        version: '3.11'
      }
    }
  }
}

// App Service authentication (Easy Auth) validates the caller's Entra token and
// passes the principal to the app in X-MS-CLIENT-PRINCIPAL; the app trusts that
// header only because this is on (HASTE_AUTH_MODE=app_service). Health and the
// OpenAPI document stay anonymous; everything else answers 401 without a token.
resource auth 'Microsoft.Web/sites/config@2024-04-01' = {
  parent: app
  name: 'authsettingsV2'
  properties: {
    platform: {
      enabled: true
    }
    globalValidation: {
      requireAuthentication: true
      unauthenticatedClientAction: 'Return401'
      excludedPaths: [
        '/api/health'
        '/api/openapi.json'
        '/api/console' // the web console's files and settings: they hold no data (docs/adr/0014)
        '/api/console/*'
      ]
    }
    identityProviders: {
      azureActiveDirectory: {
        enabled: true
        registration: {
          clientId: authClientId
          openIdIssuer: '${environment().authentication.loginEndpoint}${authTenantId}/v2.0'
        }
        validation: {
          allowedAudiences: [
            'api://${authClientId}'
            authClientId
          ]
        }
      }
    }
    login: {
      tokenStore: {
        enabled: false
      }
    }
  }
}

output name string = app.name
output principalId string = app.identity.principalId
output url string = 'https://${app.properties.defaultHostName}'
