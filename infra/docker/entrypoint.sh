#!/bin/sh
# Entry point of the haste compute images.
#
#   haste-entrypoint <workload> [args...]   run python -m hastegeo.workflows.<workload>
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
    exec python -m "hastegeo.workflows.${workload}" "$@"
    ;;
esac

case "$1" in
  imagery | training | inference | embedding | artifacts)
    echo "workload $1 does not run in this image (it runs: ${HASTE_WORKLOADS})" >&2
    exit 64
    ;;
esac

exec "$@"
