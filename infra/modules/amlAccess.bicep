// Azure ML, Existing mode: reference the operator's workspace and grant the Functions app
// one role on it. Creates no Azure ML resource. Deployed at the workspace's resource group
// (possibly another subscription), so the deploying principal needs the right to assign
// roles there (User Access Administrator or Role Based Access Control Administrator).
targetScope = 'resourceGroup'

param workspaceName string
@description('Principal id of the Functions app identity.')
param principalId string

var azureMLDataScientist = 'f6c7c914-8db3-469d-8ca1-694a8f32e121'

resource workspace 'Microsoft.MachineLearningServices/workspaces@2024-10-01' existing = {
  name: workspaceName
}

// Who: the Functions app. Why: submit, read and cancel command jobs and read their outputs in
// this workspace only; AzureML Data Scientist cannot change the workspace or its compute.
resource appDataScientist 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: workspace
  name: guid(workspace.id, principalId, azureMLDataScientist)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', azureMLDataScientist)
    principalId: principalId
    principalType: 'ServicePrincipal'
  }
}
