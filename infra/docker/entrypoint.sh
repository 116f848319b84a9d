#!/bin/sh
# Entry point of the haste compute images.
#
#   haste-entrypoint <workload> [args...]   run python -m hastegeo.workloads.<workload>
#   haste-entrypoint <command> [args...]    run any other command (Batch passes `/bin/sh -c '...'`)
#
# HASTE_JOB_WORKDIR is the provider-neutral job working directory; Azure Batch's
# AZ_BATCH_TASK_WORKING_DIR is accepted as an alias when it is not set.
set -eu

if [ -z "${HASTE_JOB_WORKDIR:-}" ] && [ -n "${AZ_BATCH_TASK_WORKING_DIR:-}" ]; then
  HASTE_JOB_WORKDIR="$AZ_BATCH_TASK_WORKING_DIR"
fi
if [ -n "${HASTE_JOB_WORKDIR:-}" ]; then
  export HASTE_JOB_WORKDIR
fi

if [ "$#" -eq 0 ]; then
  echo "usage: haste-entrypoint <workload> [args...]; this image runs: ${HASTE_WORKLOADS}" >&2
  exit 64
fi

case " ${HASTE_WORKLOADS} " in
  *" $1 "*)
    workload="$1"
    shift
    if [ -z "${HASTE_JOB_WORKDIR:-}" ]; then
      echo "HASTE_JOB_WORKDIR is not set (nor AZ_BATCH_TASK_WORKING_DIR)" >&2
      exit 64
    fi
    cd "$HASTE_JOB_WORKDIR"
    exec python -m "hastegeo.workloads.${workload}" "$@"
    ;;
esac

# A bare name that is no command here is a workload of another image: say so, with no list of names to keep.
case "$1" in
  */* | -*) ;;
  *)
    if ! command -v "$1" >/dev/null 2>&1; then
      echo "workload $1 does not run in this image (it runs: ${HASTE_WORKLOADS}), and no command is named $1" >&2
      exit 64
    fi
    ;;
esac

exec "$@"
