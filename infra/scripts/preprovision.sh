#!/usr/bin/env bash
# azd preprovision hook: what must exist before the Bicep runs.
#
# 1. The API's Entra app registration. When DEPLOY_AUTH_CLIENT_ID is empty, create (or find) the
#    registration haste-$AZURE_ENV_NAME with infra/scripts/app-registration.sh, assigning the groups
#    in HASTE_READERS_GROUP_ID / HASTE_SUBMITTERS_GROUP_ID / HASTE_ADMINS_GROUP_ID, and store its
#    client id with `azd env set`.
# 2. The Key Vault of an environment that was torn down: purge protection keeps it soft-deleted
#    under its name for 90 days, and a deploy that asks for that name fails. When azd remembers the
#    name (AZURE_KEY_VAULT_NAME, an output of the last deploy) and it is in the deleted state,
#    recover it; the deploy then finds and updates it.
set -euo pipefail

here="$(dirname "$0")"
if [ -z "${DEPLOY_AUTH_CLIENT_ID:-}" ]; then
  client_id="$(bash "$here/app-registration.sh" --name "haste-${AZURE_ENV_NAME:?}" | tail -n 1)"
  azd env set DEPLOY_AUTH_CLIENT_ID "$client_id"
  export DEPLOY_AUTH_CLIENT_ID="$client_id"
fi
vault="${AZURE_KEY_VAULT_NAME:-}"
if [ -n "$vault" ]; then
  deleted="$(az keyvault list-deleted --resource-type vault --query "[?name=='$vault'].name" --output tsv)"
  if [ -n "$deleted" ]; then
    echo "preprovision: recovering the soft-deleted Key Vault $vault" >&2
    az keyvault recover --name "$vault" --output none
  fi
fi
