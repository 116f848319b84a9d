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
#
# The builder: DEPLOY_IMAGE_BUILDER
#   auto (default)  `az acr build` (ACR Tasks, no Docker engine needed); when the registry refuses
#                   ACR Tasks (TasksOperationsNotAllowed: runs are paused for free-credit and trial
#                   subscriptions) and a Docker engine answers, build and push with it instead;
#   acr             ACR Tasks only;
#   docker          `docker build` here and `docker push` after `az acr login` (needs a running engine).
# A registry created moments ago by the same provision may answer "not found": retried while it
# replicates (infra/scripts/lib.sh).
set -euo pipefail
# shellcheck source=infra/scripts/lib.sh
. "$(dirname "$0")/lib.sh"

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
builder="${DEPLOY_IMAGE_BUILDER:-auto}"
case "$builder" in
  auto | acr | docker) ;;
  *) echo "build-images: DEPLOY_IMAGE_BUILDER must be auto, acr or docker, got '$builder'" >&2; exit 2 ;;
esac
images=("$@")
[ ${#images[@]} -gt 0 ] || images=(geo train)
for image in "${images[@]}"; do
  if [ ! -f "infra/docker/${image}/Dockerfile" ]; then
    echo "build-images: no infra/docker/${image}/Dockerfile" >&2
    exit 2
  fi
done

with_docker() { # image
  local name="haste-$1:$tag"
  if ! docker info >/dev/null 2>&1; then
    echo "build-images: no Docker engine answers here; build where one runs (DEPLOY_IMAGE_BUILDER=docker)," \
      "for example the images workflow on a GitHub-hosted runner, or ask Azure support to allow ACR Tasks" >&2
    return 1
  fi
  local server
  server="$(until_propagated build-images az acr show --name "$registry" --query loginServer --output tsv)"
  until_propagated build-images az acr login --name "$registry" >&2
  # The classic builder and BuildKit both take these Dockerfiles (no BuildKit-only syntax).
  docker build --file "infra/docker/$1/Dockerfile" --tag "$server/$name" .
  docker push "$server/$name"
}

for image in "${images[@]}"; do
  echo "build-images: haste-${image}:${tag} in ${registry} ($builder)" >&2
  if [ "$builder" = docker ]; then
    with_docker "$image"
    continue
  fi
  # Build context: the repository root (the Dockerfile copies hastelib/ and infra/docker/), sent as
  # `az acr build` reads .dockerignore (tests/infra/test_docker.py checks it with az's own rules).
  status=0
  until_propagated build-images az acr build --registry "$registry" --image "haste-${image}:${tag}" \
    --file "infra/docker/${image}/Dockerfile" . || status=$?
  if [ "$status" -eq 0 ]; then
    continue
  fi
  if [ "$builder" = auto ] && grep -q TasksOperationsNotAllowed <<<"$LAST_STDERR"; then
    echo "build-images: the registry refuses ACR Tasks (paused for free-credit and trial subscriptions," \
      "docs/deploy.md); building with Docker instead" >&2
    builder=docker
    with_docker "$image"
    continue
  fi
  exit "$status"
done
