#!/usr/bin/env bash
# Create or update the Entra app registration of the API, idempotently (safe to run again).
#
#   infra/scripts/app-registration.sh --name haste-dev \
#       [--readers <group object id>] [--submitters <group object id>] [--admins <group object id>] \
#       [--reader-users <user object id>,...] [--submitter-users ...] [--admin-users ...] \
#       [--project-groups <group id>=<project>,...] [--groups-claim application|security] \
#       [--console-url https://<function app host>/api/console/]
#
# What it makes sure of (docs/adr/0007, docs/deploy.md):
#   - an app registration named --name (single tenant) with the identifier URI api://<client id>,
#     v2 access tokens, and `groups` claims limited to groups assigned to the app;
#   - the app roles Haste.Reader, Haste.Submitter and Haste.Admin (hastegeo.auth.Role), with fixed
#     ids so a re-run changes nothing;
#   - the delegated scope user_impersonation, and the Azure CLI pre-authorised for it, so
#     `az account get-access-token` and the haste CLI (azure-identity) get tokens without consent;
#   - its service principal, and each group given as a parameter assigned its app role (an
#     assignment that exists is left alone), each user given by --*-users too;
#   - the project groups (--project-groups, the HASTE_PROJECT_GROUPS form) assigned to the app
#     (as Haste.Reader), because `groups` claims limited to ApplicationGroup carry only groups
#     assigned to the app;
#   - with --console-url, that address as a single-page-application redirect URI, so the web
#     console signs in with the authorization code flow and PKCE (docs/adr/0014).
# Assigning a GROUP to an app needs Microsoft Entra ID P1 or P2 in the tenant (docs/deploy.md).
# Without it: give roles to users (--*-users) and pass --groups-claim security, which puts the
# user's security groups in the token without assigning them, and assigns no group at all.
# Prints progress on stderr and the client id, alone, as the last line of stdout:
#   azd env set DEPLOY_AUTH_CLIENT_ID "$(infra/scripts/app-registration.sh --name haste-dev)"
# Needs the Azure CLI signed in as someone who may create app registrations and assign app roles
# (Application Administrator, or the owner of an existing registration).
# Entra ID replicates a new registration and service principal for seconds to minutes: the calls
# right after creating them are retried while they answer "not found" (infra/scripts/lib.sh).
set -euo pipefail
# shellcheck source=infra/scripts/lib.sh
. "$(dirname "$0")/lib.sh"

GRAPH="https://graph.microsoft.com/v1.0"
AZURE_CLI_APP_ID="04b07795-8ddb-461a-bbee-02f9e1bf7b46"
# Stable ids: app role and scope ids must not change between runs (assignments refer to them).
READER_ROLE_ID="6b0e1b0a-2b53-4f1e-9a51-3c1f0c5a7d01"
SUBMITTER_ROLE_ID="6b0e1b0a-2b53-4f1e-9a51-3c1f0c5a7d02"
ADMIN_ROLE_ID="6b0e1b0a-2b53-4f1e-9a51-3c1f0c5a7d03"
SCOPE_ID="6b0e1b0a-2b53-4f1e-9a51-3c1f0c5a7d10"

name=""
readers="${HASTE_READERS_GROUP_ID:-}"
submitters="${HASTE_SUBMITTERS_GROUP_ID:-}"
admins="${HASTE_ADMINS_GROUP_ID:-}"
console_url="${HASTE_CONSOLE_URL:-}"
reader_users="${HASTE_READER_USER_IDS:-}"
submitter_users="${HASTE_SUBMITTER_USER_IDS:-}"
admin_users="${HASTE_ADMIN_USER_IDS:-}"
project_groups="${HASTE_PROJECT_GROUPS:-}"
groups_claim="${HASTE_GROUPS_CLAIM:-application}"
while [ $# -gt 0 ]; do
  case "$1" in
    --name) name="${2:?--name needs a value}"; shift 2 ;;
    --readers) readers="${2:?--readers needs a group object id}"; shift 2 ;;
    --submitters) submitters="${2:?--submitters needs a group object id}"; shift 2 ;;
    --admins) admins="${2:?--admins needs a group object id}"; shift 2 ;;
    --reader-users) reader_users="${2:?--reader-users needs user object ids}"; shift 2 ;;
    --submitter-users) submitter_users="${2:?--submitter-users needs user object ids}"; shift 2 ;;
    --admin-users) admin_users="${2:?--admin-users needs user object ids}"; shift 2 ;;
    --project-groups) project_groups="${2:?--project-groups needs groupId=project,...}"; shift 2 ;;
    --groups-claim) groups_claim="${2:?--groups-claim needs application or security}"; shift 2 ;;
    --console-url) console_url="${2:?--console-url needs the https address of the console}"; shift 2 ;;
    -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
    *) echo "app-registration: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$name" ]; then
  echo "app-registration: --name is required (e.g. haste-\$AZURE_ENV_NAME)" >&2
  exit 2
fi
console_re='^https://[A-Za-z0-9.-]+(:[0-9]+)?/api/console/$'
if [ -n "$console_url" ] && ! [[ "$console_url" =~ $console_re ]]; then
  echo "app-registration: --console-url must be https://<host>/api/console/, got '$console_url'" >&2
  exit 2
fi
guid_re='^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'
for pair in "readers=$readers" "submitters=$submitters" "admins=$admins"; do
  value="${pair#*=}"
  if [ -n "$value" ] && ! [[ "$value" =~ $guid_re ]]; then
    echo "app-registration: --${pair%%=*} must be a group object id (a GUID), got '$value'" >&2
    exit 2
  fi
done
# Comma-separated lists: user ids, and the project groups' ids (HASTE_PROJECT_GROUPS: id=project).
project_group_ids=""
for entry in ${project_groups//,/ }; do
  project_group_ids="$project_group_ids,${entry%%=*}"
done
for pair in "reader-users=$reader_users" "submitter-users=$submitter_users" "admin-users=$admin_users" \
  "project-groups=$project_group_ids"; do
  list="${pair#*=}"
  for value in ${list//,/ }; do
    if ! [[ "$value" =~ $guid_re ]]; then
      echo "app-registration: --${pair%%=*} takes object ids (GUIDs), got '$value'" >&2
      exit 2
    fi
  done
done
case "$groups_claim" in
  application) groups_claim_value="ApplicationGroup" ;;
  security)
    groups_claim_value="SecurityGroup"
    if [ -n "$readers$submitters$admins" ]; then
      echo "app-registration: --groups-claim security assigns no group (no Entra ID P1); give roles with --*-users" >&2
      exit 2
    fi
    ;;
  *) echo "app-registration: --groups-claim must be application or security, got '$groups_claim'" >&2; exit 2 ;;
esac

log() { echo "app-registration: $*" >&2; }
workdir="$(mktemp -d)"
trap 'rm -rf "$workdir"' EXIT

# 1. The registration: found by display name, created when missing.
client_id="$(az ad app list --display-name "$name" --query "[0].appId" --output tsv)"
if [ -z "$client_id" ]; then
  client_id="$(az ad app create --display-name "$name" --sign-in-audience AzureADMyOrg --query appId --output tsv)"
  log "created app registration $name ($client_id)"
else
  log "found app registration $name ($client_id)"
fi
object_id="$(until_propagated app-registration az ad app show --id "$client_id" --query id --output tsv)"

# 2. Identifier URI, roles, scope and token shape, in one PATCH (the same body on every run).
role() { # id value display description
  printf '{"id":"%s","value":"%s","displayName":"%s","description":"%s","allowedMemberTypes":["User","Application"],"isEnabled":true}' \
    "$1" "$2" "$3" "$4"
}
cat > "$workdir/app.json" <<EOF
{
  "identifierUris": ["api://$client_id"],
  "groupMembershipClaims": "$groups_claim_value",
  "appRoles": [
    $(role "$READER_ROLE_ID" "Haste.Reader" "Haste reader" "Lists and reads the jobs of the caller's projects."),
    $(role "$SUBMITTER_ROLE_ID" "Haste.Submitter" "Haste submitter" "Reads, submits and cancels jobs of the caller's projects."),
    $(role "$ADMIN_ROLE_ID" "Haste.Admin" "Haste admin" "Everything, in every project.")
  ],
  "api": {
    "requestedAccessTokenVersion": 2,
    "oauth2PermissionScopes": [{
      "id": "$SCOPE_ID",
      "value": "user_impersonation",
      "type": "User",
      "isEnabled": true,
      "adminConsentDisplayName": "Call the haste-compute API",
      "adminConsentDescription": "Call the haste-compute API as the signed-in user.",
      "userConsentDisplayName": "Call the haste-compute API",
      "userConsentDescription": "Call the haste-compute API as you."
    }]
  }
}
EOF
until_propagated app-registration az rest --method PATCH --uri "$GRAPH/applications/$object_id" \
  --headers "Content-Type=application/json" --body "@$workdir/app.json" --output none
# Pre-authorisation refers to the scope, so it goes in a second PATCH, once the scope exists.
cat > "$workdir/preauth.json" <<EOF
{"api": {"preAuthorizedApplications": [{"appId": "$AZURE_CLI_APP_ID", "delegatedPermissionIds": ["$SCOPE_ID"]}]}}
EOF
until_propagated app-registration az rest --method PATCH --uri "$GRAPH/applications/$object_id" \
  --headers "Content-Type=application/json" --body "@$workdir/preauth.json" --output none
log "identifier URI api://$client_id, roles Haste.Reader/Submitter/Admin, Azure CLI pre-authorised"
if [ -n "$console_url" ]; then
  bash "$(dirname "$0")/console-redirect.sh" "$client_id" "$console_url"
fi

# 3. The service principal (enterprise application) that role assignments hang on.
sp_id="$(az ad sp list --filter "appId eq '$client_id'" --query "[0].id" --output tsv)"
if [ -z "$sp_id" ]; then
  sp_id="$(until_propagated app-registration az ad sp create --id "$client_id" --query id --output tsv)"
  log "created service principal $sp_id"
fi

# 4. Groups and users to roles; an assignment that already exists is not sent again.
existing="$(az rest --method GET --uri "$GRAPH/servicePrincipals/$sp_id/appRoleAssignedTo" \
  --query "value[].[principalId, appRoleId]" --output tsv)"
assign() { # principal role-id role-name kind
  [ -n "$1" ] || return 0
  if holds_role "$existing" "$1" "$2"; then
    log "$4 $1 already has $3"
    return 0
  fi
  printf '{"principalId":"%s","resourceId":"%s","appRoleId":"%s"}' "$1" "$sp_id" "$2" > "$workdir/assign.json"
  if ! until_propagated app-registration az rest --method POST --uri "$GRAPH/servicePrincipals/$sp_id/appRoleAssignedTo" \
    --headers "Content-Type=application/json" --body "@$workdir/assign.json" --output none; then
    if [ "$4" = group ]; then
      log "could not assign $3 to group $1: assigning groups to an app needs Microsoft Entra ID P1 or P2;" \
        "without it give roles to users (--reader-users, --submitter-users, --admin-users) and pass --groups-claim security"
    fi
    return 1
  fi
  existing="$existing"$'\n'"$1	$2"
  log "assigned $3 to $4 $1"
}
assign "$readers" "$READER_ROLE_ID" Haste.Reader group
assign "$submitters" "$SUBMITTER_ROLE_ID" Haste.Submitter group
assign "$admins" "$ADMIN_ROLE_ID" Haste.Admin group
for user in ${reader_users//,/ }; do assign "$user" "$READER_ROLE_ID" Haste.Reader user; done
for user in ${submitter_users//,/ }; do assign "$user" "$SUBMITTER_ROLE_ID" Haste.Submitter user; done
for user in ${admin_users//,/ }; do assign "$user" "$ADMIN_ROLE_ID" Haste.Admin user; done
# Project groups: in the token only when assigned to the app (ApplicationGroup); the script the
# deploy paths run again. With the SecurityGroup claim it assigns none.
HASTE_PROJECT_GROUPS="$project_groups" HASTE_GROUPS_CLAIM="$groups_claim" \
  bash "$(dirname "$0")/project-groups.sh" "$client_id" "$sp_id"

echo "$client_id"
