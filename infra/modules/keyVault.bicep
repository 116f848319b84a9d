// Key Vault, only for what cannot use an identity. Nothing the pipeline needs today is a
// secret (storage, Batch, Azure ML and the registry are reached with managed identities), so
// it is created only when DEPLOY_KEY_VAULT=true or when Azure ML Create mode needs one for
// its workspace. RBAC authorization (no access policies), purge protection on.

param location string
param tags object
@minLength(3)
@maxLength(24)
param name string

resource vault 'Microsoft.KeyVault/vaults@2023-07-01' = {
  name: name
  location: location
  tags: tags
  properties: {
    tenantId: subscription().tenantId
    sku: {
      family: 'A'
      name: 'standard'
    }
    enableRbacAuthorization: true
    enableSoftDelete: true
    softDeleteRetentionInDays: 90
    enablePurgeProtection: true
    publicNetworkAccess: 'Enabled'
  }
}

output name string = vault.name
output id string = vault.id
