#!/usr/bin/env bash
# Register the web console's address as a single-page-application redirect URI of the API's app
# registration, idempotently: the URIs already there are kept, and nothing is sent when it is one
# of them. Every deploy path runs it once the host name is known (azd's postprovision hook, the
# deploy workflow, app-registration.sh --console-url); until it runs, console sign-in answers
# AADSTS50011.
#
#   infra/scripts/console-redirect.sh <client id> <https://host>[/api/console/]
#
# Needs the Azure CLI signed in as an owner of the registration (or Application Administrator); an
# app-only sign-in (the deploy workflow's service principal) needs to own it AND hold the Graph
# application permission Application.ReadWrite.OwnedBy, with an admin's consent: owning the
# registration is not enough for an app-only token. When Graph refuses, the script says so and
# exits 3, or 0 with GRAPH_REFUSAL_OK=true (the deploy goes on; the console signs in once it ran).
# Calls made right after the registration was created are retried while Entra replicates it.
set -euo pipefail
# shellcheck source=infra/scripts/lib.sh
. "$(dirname "$0")/lib.sh"
NEEDS="to own the app registration and, signed in as an application, Application.ReadWrite.OwnedBy (admin consent)"

client_id="${1:?usage: console-redirect.sh <client id> <https://host>}"
address="${2:?usage: console-redirect.sh <client id> <https://host>}"
address="${address%/}"
address="${address%/api/console}/api/console/"
console_re='^https://[A-Za-z0-9.-]+(:[0-9]+)?/api/console/$'
if ! [[ "$address" =~ $console_re ]]; then
  echo "console-redirect: the console address must be https://<host>/api/console/, got '$address'" >&2
  exit 2
fi

workdir="$(mktemp -d)"
trap 'rm -rf "$workdir"' EXIT
# Not in $(...): LAST_STDERR must reach this shell.
if ! until_propagated console-redirect az ad app show --id "$client_id" --query id --output tsv >"$workdir/id"; then
  if grep -Eq "$GRAPH_REFUSED_PATTERN" <<<"$LAST_STDERR"; then
    refused_by_graph console-redirect "reading the app registration $client_id" "$NEEDS"
    exit $?
  fi
  echo "console-redirect: no app registration with client id $client_id" >&2
  exit 1
fi
object_id="$(cat "$workdir/id")"
if [ -z "$object_id" ]; then
  echo "console-redirect: no app registration with client id $client_id" >&2
  exit 1
fi
mapfile -t uris < <(until_propagated console-redirect az ad app show --id "$client_id" --query "spa.redirectUris[]" --output tsv)
for uri in "${uris[@]}"; do
  if [ "$uri" = "$address" ]; then
    echo "console-redirect: $address is already registered" >&2
    exit 0
  fi
done
uris+=("$address")
body="$(printf '"%s",' "${uris[@]}")"
printf '{"spa": {"redirectUris": [%s]}}' "${body%,}" > "$workdir/spa.json"
if ! until_propagated console-redirect az rest --method PATCH \
  --uri "https://graph.microsoft.com/v1.0/applications/$object_id" \
  --headers "Content-Type=application/json" --body "@$workdir/spa.json" --output none; then
  if grep -Eq "$GRAPH_REFUSED_PATTERN" <<<"$LAST_STDERR"; then
    refused_by_graph console-redirect "adding $address to the redirect URIs of $client_id" "$NEEDS"
    exit $?
  fi
  exit 1
fi
echo "console-redirect: registered $address" >&2
