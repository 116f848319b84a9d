#!/usr/bin/env bash
# Register the web console's address as a single-page-application redirect URI of the API's app
# registration, idempotently: the URIs already there are kept, and nothing is sent when it is one
# of them. Every deploy path runs it once the host name is known (azd's postprovision hook, the
# deploy workflow, app-registration.sh --console-url); until it runs, console sign-in answers
# AADSTS50011.
#
#   infra/scripts/console-redirect.sh <client id> <https://host>[/api/console/]
#
# Needs the Azure CLI signed in as an owner of the registration (or Application Administrator).
set -euo pipefail

client_id="${1:?usage: console-redirect.sh <client id> <https://host>}"
address="${2:?usage: console-redirect.sh <client id> <https://host>}"
address="${address%/}"
address="${address%/api/console}/api/console/"
console_re='^https://[A-Za-z0-9.-]+(:[0-9]+)?/api/console/$'
if ! [[ "$address" =~ $console_re ]]; then
  echo "console-redirect: the console address must be https://<host>/api/console/, got '$address'" >&2
  exit 2
fi

object_id="$(az ad app show --id "$client_id" --query id --output tsv)"
if [ -z "$object_id" ]; then
  echo "console-redirect: no app registration with client id $client_id" >&2
  exit 1
fi
mapfile -t uris < <(az ad app show --id "$client_id" --query "spa.redirectUris[]" --output tsv)
for uri in "${uris[@]}"; do
  if [ "$uri" = "$address" ]; then
    echo "console-redirect: $address is already registered" >&2
    exit 0
  fi
done
uris+=("$address")
body="$(printf '"%s",' "${uris[@]}")"
workdir="$(mktemp -d)"
trap 'rm -rf "$workdir"' EXIT
printf '{"spa": {"redirectUris": [%s]}}' "${body%,}" > "$workdir/spa.json"
az rest --method PATCH --uri "https://graph.microsoft.com/v1.0/applications/$object_id" \
  --headers "Content-Type=application/json" --body "@$workdir/spa.json" --output none
echo "console-redirect: registered $address" >&2
