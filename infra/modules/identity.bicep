// The user-assigned identity of the compute: Batch pools (and Create-mode Azure ML clusters)
// pull images from the registry and move job inputs and outputs with it.

param location string
param tags object
param name string

resource identity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: name
  location: location
  tags: tags
}

output id string = identity.id
output principalId string = identity.properties.principalId
output clientId string = identity.properties.clientId
