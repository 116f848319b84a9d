#!/usr/bin/env bash
# Run a deploy command again while it is refused with 403 because a role assigned in the same
# deployment has not propagated yet (Azure RBAC takes minutes; docs/adr/0019). Bounded: at most
# RETRY_403_ATTEMPTS runs (default 6) with waits of RETRY_403_FIRST_WAIT_S seconds (default 15),
# doubling, at most 120 s each (about 6 minutes in all); each run is stopped after
# RETRY_403_RUN_TIMEOUT_S (default 1200), since `az functionapp deployment source config-zip` can
# poll a Flex host's status forever. Any other failure stops at once with the command's status.
#
#   infra/scripts/retry-on-403.sh az functionapp deployment source config-zip ...
#   infra/scripts/retry-on-403.sh azd deploy
set -uo pipefail

attempts="${RETRY_403_ATTEMPTS:-6}"
wait_s="${RETRY_403_FIRST_WAIT_S:-15}"
run_timeout="${RETRY_403_RUN_TIMEOUT_S:-1200}"
if [ "$#" -eq 0 ]; then
  echo "usage: retry-on-403.sh <command> [args...]" >&2
  exit 64
fi
# What a refusal for want of a role looks like in az, azd and the Flex deployment endpoint.
refused='(^|[^0-9])403([^0-9]|$)|Forbidden|AuthorizationFailed|AuthorizationPermissionMismatch'
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
for attempt in $(seq 1 "$attempts"); do
  # stdout passes through; stderr is shown and kept, to tell a 403 from any other failure.
  { timeout "$run_timeout" "$@" 2>&1 1>&3 3>&- | tee "$log" >&2; } 3>&1
  status="${PIPESTATUS[0]}"
  if [ "$status" -eq 0 ]; then
    exit 0
  fi
  if [ "$status" -eq 124 ]; then
    echo "retry-on-403: '$1' did not finish within ${run_timeout}s" >&2
    exit "$status"
  fi
  if ! grep -Eq "$refused" "$log"; then
    exit "$status"
  fi
  if [ "$attempt" -eq "$attempts" ]; then
    echo "retry-on-403: still refused (403) after $attempts attempts; check the role assignments (haste doctor)" >&2
    exit "$status"
  fi
  echo "retry-on-403: refused (403), a role assigned in this deployment may not have propagated; attempt $((attempt + 1)) of $attempts in ${wait_s}s" >&2
  sleep "$wait_s"
  wait_s=$((wait_s * 2 > 120 ? 120 : wait_s * 2))
done
