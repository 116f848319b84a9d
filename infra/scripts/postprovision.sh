#!/usr/bin/env bash
# azd postprovision hook: what needs the deployed resources. Every step is idempotent.
#
# 1. The web console's redirect URI on the API's app registration: the host name exists only now
#    (preprovision runs before it), and console sign-in fails (AADSTS50011) until it is there.
# 2. The project groups of HASTE_PROJECT_GROUPS assigned to the app (a group added later is
#    assigned now), unless HASTE_GROUPS_CLAIM=security.
# 3. The compute images, built and pushed into the registry the Bicep created.
# 4. The Azure ML Environment when Azure ML is enabled.
# azd hands the deployment's outputs (FUNCTION_APP_URL) and `azd env set` values to hooks.
# When Microsoft Graph refuses step 1 or 2 for want of a permission, the hook says what is needed and
# goes on (GRAPH_REFUSAL_OK): the images and the Environment do not depend on them, and `haste doctor`
# reports the missing redirect URI or group until the script is run again by someone allowed to.
set -euo pipefail

here="$(dirname "$0")"
export GRAPH_REFUSAL_OK="${GRAPH_REFUSAL_OK:-true}"
bash "$here/console-redirect.sh" "${DEPLOY_AUTH_CLIENT_ID:?DEPLOY_AUTH_CLIENT_ID is not set (preprovision sets it)}" \
  "${FUNCTION_APP_URL:?FUNCTION_APP_URL is not an output of this environment: provision first}"
bash "$here/project-groups.sh" "$DEPLOY_AUTH_CLIENT_ID"
export DEPLOY_IMAGE_TAG="${DEPLOYED_IMAGE_TAG:-${DEPLOY_IMAGE_TAG:-1}}"
bash "$here/build-images.sh" geo train
bash "$here/register-aml-environment.sh"
