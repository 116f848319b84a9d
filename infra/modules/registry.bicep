// Container registry of the compute images. No admin user and no anonymous pull: Batch pools
// and Azure ML compute pull with a managed identity (AcrPull in roles.bicep); the images
// workflow builds and pushes with `az acr build` as the deploying principal.

param location string
param tags object
@minLength(5)
@maxLength(50)
param name string

resource registry 'Microsoft.ContainerRegistry/registries@2023-07-01' = {
  name: name
  location: location
  tags: tags
  sku: {
    name: 'Standard'
  }
  properties: {
    adminUserEnabled: false
    anonymousPullEnabled: false
    publicNetworkAccess: 'Enabled'
  }
}

output name string = registry.name
output id string = registry.id
output loginServer string = registry.properties.loginServer
