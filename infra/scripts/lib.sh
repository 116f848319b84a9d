#!/usr/bin/env bash
# Shared by the scripts in infra/scripts (sourced, not run).
#
# until_propagated <what> <command> [args...]
#   Run a control-plane call made right after creating what it calls (an Entra application, its
#   service principal, a registry, a workspace, a role assignment). Entra ID and Azure RBAC replicate
#   for seconds to minutes, so such a call can be answered "not found" or 403 although the object
#   exists. Retried only on those answers, with waits of PROPAGATION_FIRST_WAIT_S (default 10)
#   doubling to 60 s, at most PROPAGATION_ATTEMPTS runs (default 6, about 3 minutes in all); any
#   other failure, and the last refusal, stop with the command's status and a readable line.
#   stdout passes through; stderr is shown once the run ends, and kept in LAST_STDERR on failure.
#
# graph_refused <file>
#   Whether the stderr kept in <file> is Microsoft Graph refusing for want of a permission
#   (403 Authorization_RequestDenied, "Insufficient privileges"), as opposed to any other failure.
#
# holds_role <assignments> <principal id> <app role id>
#   Whether <assignments> (Graph's appRoleAssignedTo as tsv lines "<principal>\t<role>") already
#   gives the principal that role (ids compared without case). The list goes to grep as a
#   here-string: piped from printf, grep -q leaving at its first match killed printf's next write
#   (SIGPIPE), pipefail failed the pipeline, and an assignment held was sent again.

# LAST_STDERR: the stderr of the last failed until_propagated run (read by the scripts that source this).
export LAST_STDERR=""
PROPAGATION_PATTERN='Request_ResourceNotFound|ResourceNotFound|does not exist|[Nn]ot [Ff]ound|PrincipalNotFound|(^|[^0-9])404([^0-9]|$)|(^|[^0-9])403([^0-9]|$)|AuthorizationFailed|Forbidden'
GRAPH_REFUSED_PATTERN='Authorization_RequestDenied|Insufficient privileges'

until_propagated() {
  local what="$1"
  shift
  local attempts="${PROPAGATION_ATTEMPTS:-6}" wait_s="${PROPAGATION_FIRST_WAIT_S:-10}" attempt status err
  err="$(mktemp)"
  LAST_STDERR=""
  for attempt in $(seq 1 "$attempts"); do
    status=0
    "$@" 2>"$err" || status=$?
    cat "$err" >&2
    if [ "$status" -eq 0 ]; then
      rm -f "$err"
      return 0
    fi
    if grep -Eq "$GRAPH_REFUSED_PATTERN" "$err" || ! grep -Eq "$PROPAGATION_PATTERN" "$err"; then
      LAST_STDERR="$(cat "$err")"
      rm -f "$err"
      return "$status"
    fi
    if [ "$attempt" -eq "$attempts" ]; then
      echo "$what: still refused after $attempts attempts (not a propagation delay, or a long one): $(tail -n 1 "$err")" >&2
      LAST_STDERR="$(cat "$err")"
      rm -f "$err"
      return "$status"
    fi
    echo "$what: refused ($(grep -Eo "$PROPAGATION_PATTERN" "$err" | head -n 1)); it was created moments ago and may not have replicated yet; attempt $((attempt + 1)) of $attempts in ${wait_s}s" >&2
    sleep "$wait_s"
    wait_s=$((wait_s * 2 > 60 ? 60 : wait_s * 2))
  done
}

graph_refused() {
  grep -Eq "$GRAPH_REFUSED_PATTERN" "$1"
}

holds_role() {
  grep -qi "^$2[[:space:]]*$3\$" <<<"$1"
}

# refused_by_graph <script> <what was refused> <what it needs>
#   Say that Microsoft Graph refused a step for want of a permission, and what grants it. Returns 3,
#   or 0 with GRAPH_REFUSAL_OK=true (the deploy goes on: the workflow and azd's postprovision hook
#   set it), in which case the line is also a GitHub warning and a line of the job summary.
refused_by_graph() {
  local line="$1: Microsoft Graph refused $2; it needs $3. The deploy goes on without it; run this script again once granted (docs/deploy.md, Who may touch what)."
  echo "$line" >&2
  if [ "${GRAPH_REFUSAL_OK:-false}" != true ]; then
    return 3
  fi
  if [ "${GITHUB_ACTIONS:-}" = true ]; then
    echo "::warning title=$1::$line"
  fi
  if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
    echo "- **Left for later** — $line" >> "$GITHUB_STEP_SUMMARY"
  fi
  return 0
}
