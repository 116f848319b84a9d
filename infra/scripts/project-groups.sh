#!/usr/bin/env bash
# Assign the project groups (HASTE_PROJECT_GROUPS: <group object id>=<project>,...) to the API's
# app registration as Haste.Reader, idempotently: an assignment that exists is not sent again.
# With `groupMembershipClaims: ApplicationGroup` a group reaches the token only when it is assigned
# to the app, so a project group left unassigned gives its members no project (docs/adr/0007).
# Run by app-registration.sh, azd's postprovision hook and the deploy workflow, so a group added
# to HASTE_PROJECT_GROUPS later is assigned by the next deploy.
#
#   infra/scripts/project-groups.sh <client id> [<service principal object id>]
#
# (app-registration.sh passes the service principal it just created: Graph may not list it yet.)
#
# Assigning groups to an app needs Microsoft Entra ID P1 or P2. Without it set
# HASTE_GROUPS_CLAIM=security (tokens then carry every security group of the user): nothing is
# assigned here. Needs the Azure CLI signed in as an owner of the app's service principal (or
# Application Administrator); an app-only sign-in (the deploy workflow's service principal) needs
# the Graph application permissions AppRoleAssignment.ReadWrite.All and Application.Read.All, with
# an admin's consent. When Graph refuses for want of them, the script says so and exits 3, or 0 with
# GRAPH_REFUSAL_OK=true (the deploy goes on). A service principal created moments ago is retried
# while Entra replicates it.
set -euo pipefail
# shellcheck source=infra/scripts/lib.sh
. "$(dirname "$0")/lib.sh"
NEEDS="AppRoleAssignment.ReadWrite.All and Application.Read.All when signed in as an application (admin consent), or ownership of the app's service principal"

GRAPH="https://graph.microsoft.com/v1.0"
READER_ROLE_ID="6b0e1b0a-2b53-4f1e-9a51-3c1f0c5a7d01" # Haste.Reader, as app-registration.sh defines it

client_id="${1:?usage: project-groups.sh <client id>}"
groups="${HASTE_PROJECT_GROUPS:-}"
log() { echo "project-groups: $*" >&2; }
if [ "${HASTE_GROUPS_CLAIM:-application}" = security ]; then
  log "HASTE_GROUPS_CLAIM=security: tokens carry every security group; no group is assigned"
  exit 0
fi
ids=()
guid_re='^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'
for entry in ${groups//,/ }; do
  if ! [[ "${entry%%=*}" =~ $guid_re ]] || [ "${entry#*=}" = "$entry" ]; then
    log "HASTE_PROJECT_GROUPS takes <group object id>=<project>, got '$entry'"
    exit 2
  fi
  ids+=("${entry%%=*}")
done
if [ ${#ids[@]} -eq 0 ]; then
  log "HASTE_PROJECT_GROUPS is empty: no project group to assign"
  exit 0
fi

sp_id="${2:-}"
if [ -z "$sp_id" ]; then
  sp_id="$(az ad sp list --filter "appId eq '$client_id'" --query "[0].id" --output tsv)"
fi
if [ -z "$sp_id" ]; then
  log "no service principal for the app $client_id (run app-registration.sh first)"
  exit 1
fi
workdir="$(mktemp -d)"
trap 'rm -rf "$workdir"' EXIT
# Not in $(...): LAST_STDERR must reach this shell.
if ! until_propagated project-groups az rest --method GET --uri "$GRAPH/servicePrincipals/$sp_id/appRoleAssignedTo" \
  --query "value[].[principalId, appRoleId]" --output tsv >"$workdir/existing"; then
  if grep -Eq "$GRAPH_REFUSED_PATTERN" <<<"$LAST_STDERR"; then
    refused_by_graph project-groups "reading who holds the app's roles" "$NEEDS"
    exit $?
  fi
  exit 1
fi
existing="$(cat "$workdir/existing")"
for group in "${ids[@]}"; do
  if holds_role "$existing" "$group" "$READER_ROLE_ID"; then
    log "project group $group is already assigned"
    continue
  fi
  printf '{"principalId":"%s","resourceId":"%s","appRoleId":"%s"}' "$group" "$sp_id" "$READER_ROLE_ID" \
    > "$workdir/assign.json"
  if ! until_propagated project-groups az rest --method POST --uri "$GRAPH/servicePrincipals/$sp_id/appRoleAssignedTo" \
    --headers "Content-Type=application/json" --body "@$workdir/assign.json" --output none; then
    if grep -Eq "$GRAPH_REFUSED_PATTERN" <<<"$LAST_STDERR"; then
      refused_by_graph project-groups "assigning project group $group to the app" "$NEEDS"
      exit $?
    fi
    log "could not assign project group $group: assigning groups to an app needs Microsoft Entra ID P1 or P2;" \
      "without it set HASTE_GROUPS_CLAIM=security and give roles to users"
    exit 1
  fi
  existing="$existing"$'\n'"$group	$READER_ROLE_ID"
  log "assigned project group $group (Haste.Reader)"
done
