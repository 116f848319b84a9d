// Key Vault, only for what cannot use an identity. Nothing the pipeline needs today is a
// secret (storage, Batch, Azure ML and the registry are reached with managed identities), so
// it is created only when DEPLOY_KEY_VAULT=true or when Azure ML Create mode needs one for
// its workspace. RBAC authorization (no access policies), purge protection on.
//
// Purge protection keeps a deleted vault (and its name) for 90 days. The name is derived from
// the subscription and the environment name only, so the next deployment of the same environment
// asks for the same name: with recover=true (DEPLOY_KEY_VAULT_RECOVER) it recovers the deleted
// vault instead of failing on "already exists in deleted state" (docs/deploy.md, Tear down).

param location string
param tags object
@minLength(3)
@maxLength(24)
param name string
@description('true: recover the soft-deleted vault of this name instead of creating one.')
param recover bool = false

resource vault 'Microsoft.KeyVault/vaults@2023-07-01' = {
  name: name
  location: location
  tags: tags
  properties: {
    createMode: recover ? 'recover' : 'default'
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
