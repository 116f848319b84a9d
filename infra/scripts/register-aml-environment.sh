#!/usr/bin/env bash
# Register the Azure ML Environment the deployment points at, from the training image in the
# environment's registry, when it is not there yet (azd postprovision hook; idempotent).
#
# Reads the deployment's outputs (azd copies them into its environment): DEPLOYED_AML_MODE,
# DEPLOYED_AML_SUBSCRIPTION_ID, DEPLOYED_AML_RESOURCE_GROUP, DEPLOYED_AML_WORKSPACE,
# DEPLOYED_AML_ENVIRONMENT (name:version or name@label), DEPLOYED_AML_IMAGE and DEPLOYED_IMAGE_TAG.
# Create mode: the Bicep registered haste-runtime:<tag> already, so this finds it and does nothing.
# Existing mode: it registers name:<version> (the pinned version, else the image tag) in your
# workspace, so AML_ENVIRONMENT_SOURCE=registered works without a manual step.
# The workspace may have been created minutes ago by the same provision: a "not found" from it is
# retried while it replicates (infra/scripts/lib.sh).
set -euo pipefail
# shellcheck source=infra/scripts/lib.sh
. "$(dirname "$0")/lib.sh"

mode="${DEPLOYED_AML_MODE:-Disabled}"
if [ "$mode" = "Disabled" ]; then
  echo "register-aml-environment: Azure ML is disabled; nothing to register" >&2
  exit 0
fi
reference="${DEPLOYED_AML_ENVIRONMENT:?DEPLOYED_AML_ENVIRONMENT is empty}"
reference="${reference#azureml:}"
case "$reference" in
  *:*) name="${reference%%:*}"; version="${reference#*:}" ;;
  *@*) name="${reference%%@*}"; version="${DEPLOYED_IMAGE_TAG:?DEPLOYED_IMAGE_TAG is empty}" ;;
  *) echo "register-aml-environment: AML_ENVIRONMENT must be name:version or name@label, got $reference" >&2; exit 2 ;;
esac
image="${DEPLOYED_AML_IMAGE:?DEPLOYED_AML_IMAGE is empty}"
workspace=(--subscription "${DEPLOYED_AML_SUBSCRIPTION_ID:?}" --resource-group "${DEPLOYED_AML_RESOURCE_GROUP:?}"
  --workspace-name "${DEPLOYED_AML_WORKSPACE:?}")

az extension show --name ml --output none 2>/dev/null || az extension add --name ml --yes --only-show-errors
if az ml environment show --name "$name" --version "$version" "${workspace[@]}" --output none 2>/dev/null; then
  echo "register-aml-environment: $name:$version exists; unchanged" >&2
  exit 0
fi
until_propagated register-aml-environment \
  az ml environment create --name "$name" --version "$version" --image "$image" "${workspace[@]}" --output none
echo "register-aml-environment: registered $name:$version from $image" >&2
