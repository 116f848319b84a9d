#!/usr/bin/env bash
# Build the compute images in the environment's registry (`az acr build`: no Docker engine needed)
# and tag them haste-<image>:<tag>. Used by the azd postprovision hook and .github/workflows/images.yml.
#
#   infra/scripts/build-images.sh [geo] [train]        # default: both
#
# The registry: AZURE_CONTAINER_REGISTRY_NAME when set (azd copies the deployment's outputs into its
# environment), else the output of the newest successful subscription deployment of this
# environment, found by its AZURE_RESOURCE_GROUP output (rg-$AZURE_ENV_NAME). That works whichever
# path deployed (azd names its deployments differently from the deploy workflow).
# The tag: DEPLOY_IMAGE_TAG (the tag the Batch pools and Azure ML are configured with), default 1.
set -euo pipefail

cd "$(dirname "$0")/../.."
tag="${DEPLOY_IMAGE_TAG:-1}"
registry="${AZURE_CONTAINER_REGISTRY_NAME:-}"
if [ -z "$registry" ]; then
  env_name="${AZURE_ENV_NAME:?set AZURE_ENV_NAME (or AZURE_CONTAINER_REGISTRY_NAME)}"
  query="reverse(sort_by([?properties.provisioningState=='Succeeded' && properties.outputs.AZURE_RESOURCE_GROUP.value=='rg-${env_name}'], &properties.timestamp))[0].properties.outputs.AZURE_CONTAINER_REGISTRY_NAME.value"
  registry="$(az deployment sub list --query "$query" --output tsv)"
fi
if [ -z "$registry" ]; then
  echo "build-images: no successful deployment of environment ${AZURE_ENV_NAME:-?} found; deploy first" >&2
  exit 1
fi
images=("$@")
[ ${#images[@]} -gt 0 ] || images=(geo train)
for image in "${images[@]}"; do
  if [ ! -f "infra/docker/${image}/Dockerfile" ]; then
    echo "build-images: no infra/docker/${image}/Dockerfile" >&2
    exit 2
  fi
  echo "build-images: haste-${image}:${tag} in ${registry}" >&2
  # Build context: the repository root (the Dockerfile copies hastelib/ and infra/docker/).
  az acr build --registry "$registry" --image "haste-${image}:${tag}" --file "infra/docker/${image}/Dockerfile" .
done
