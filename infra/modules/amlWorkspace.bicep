// Azure ML, Create mode: a workspace, CPU and GPU compute clusters that scale to zero,
// identity-based datastores over the inputs and the outputs containers, and the registered
// Environment haste-runtime (the training image, which main.bicep also emits as AML_IMAGE). Existing mode creates none of this (amlAccess.bicep
// only grants a role); Disabled mode deploys nothing for Azure ML.
//
// The cluster names haste-cpu and haste-gpu are the code's default AML_COMPUTE, and the
// Environment haste-runtime is its default AML_ENVIRONMENT (haste-runtime@latest), so Create
// mode works with the defaults.

param location string
param tags object
param name string
param storageAccountName string
param outputsContainer string
param inputsContainer string
param keyVaultName string
param appInsightsName string
param registryName string
@description('User-assigned identity of the clusters (the same one the Batch pools use).')
param computeIdentityId string
param cpuVmSize string
param gpuVmSize string
@minValue(1)
param maxNodes int
param lowPriority bool
@description('Image of the registered Environment.')
param image string
@description('Version of the registered Environment (the image tag).')
param imageTag string

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: storageAccountName
}

resource vault 'Microsoft.KeyVault/vaults@2023-07-01' existing = {
  name: keyVaultName
}

resource insights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: appInsightsName
}

resource registry 'Microsoft.ContainerRegistry/registries@2023-07-01' existing = {
  name: registryName
}

resource workspace 'Microsoft.MachineLearningServices/workspaces@2024-10-01' = {
  name: name
  location: location
  tags: tags
  identity: {
    type: 'SystemAssigned'
  }
  sku: {
    name: 'Basic'
    tier: 'Basic'
  }
  properties: {
    friendlyName: name
    storageAccount: storage.id
    keyVault: vault.id
    applicationInsights: insights.id
    containerRegistry: registry.id
    // The storage account has no shared keys: the workspace's own datastores use identity too.
    systemDatastoresAuthMode: 'identity'
    publicNetworkAccess: 'Enabled'
  }
}

var clusters = [
  { name: 'haste-cpu', vmSize: cpuVmSize }
  { name: 'haste-gpu', vmSize: gpuVmSize }
]

resource computes 'Microsoft.MachineLearningServices/workspaces/computes@2024-10-01' = [
  for cluster in clusters: {
    parent: workspace
    name: cluster.name
    location: location
    identity: {
      type: 'UserAssigned'
      userAssignedIdentities: {
        '${computeIdentityId}': {}
      }
    }
    properties: {
      computeType: 'AmlCompute'
      properties: {
        vmSize: cluster.vmSize
        vmPriority: lowPriority ? 'LowPriority' : 'Dedicated'
        osType: 'Linux'
        remoteLoginPortPublicAccess: 'Disabled'
        scaleSettings: {
          minNodeCount: 0
          maxNodeCount: maxNodes
          nodeIdleTimeBeforeScaleDown: 'PT120S'
        }
      }
    }
  }
]

// Jobs mount their inputs from one datastore and write outputs/** and logs/** to the other.
// hastegeo maps a container to the datastore of its name with '-' replaced by '_' (haste-inputs ->
// haste_inputs) unless AML_DATASTORES says otherwise; container names allow no other symbol.
resource datastores 'Microsoft.MachineLearningServices/workspaces/datastores@2024-10-01' = [
  for container in [inputsContainer, outputsContainer]: {
    parent: workspace
    name: replace(container, '-', '_')
    properties: {
      datastoreType: 'AzureBlob'
      accountName: storage.name
      containerName: container
      endpoint: environment().suffixes.storage
      protocol: 'https'
      credentials: {
        credentialsType: 'None'
      }
      serviceDataAccessAuthIdentity: 'WorkspaceSystemAssignedIdentity'
    }
  }
]

resource runtimeEnvironment 'Microsoft.MachineLearningServices/workspaces/environments@2024-10-01' = {
  parent: workspace
  name: 'haste-runtime'
  properties: {
    description: 'haste-compute training/inference image'
  }
}

resource runtimeVersion 'Microsoft.MachineLearningServices/workspaces/environments/versions@2024-10-01' = {
  parent: runtimeEnvironment
  name: imageTag
  properties: {
    image: image
    osType: 'Linux'
  }
}

output name string = workspace.name
output principalId string = workspace.identity.principalId
