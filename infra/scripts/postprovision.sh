#!/usr/bin/env bash
# azd postprovision hook: build and push the compute images into the registry the Bicep created,
# then register the Azure ML Environment when Azure ML is enabled. Both steps are idempotent.
set -euo pipefail

here="$(dirname "$0")"
export DEPLOY_IMAGE_TAG="${DEPLOYED_IMAGE_TAG:-${DEPLOY_IMAGE_TAG:-1}}"
bash "$here/build-images.sh" geo train
bash "$here/register-aml-environment.sh"
