#!/usr/bin/env bash
# The soak: dlock (hand-off on and off, asynchronous) and Curator clients on one lock of a 5-member
# ZooKeeper ensemble in Docker containers while a seeded nemesis partitions, pauses and kills the
# members; then the history is checked (docs/RELIABILITY.md).
#
#   bash scripts/soak.sh [--seconds N] [--seed S] [--out DIR] [--negative-control exclusion|fencing] ...
#
# Options go to build/tools/soak/dlock_soak (its --help is its header comment): defaults 90 s,
# seed 1, DIR build/soak-<seed>. It writes DIR/report.txt, the hold logs, DIR/soak.png. Needs a
# build with the tests (the README's test command makes one) and root for the Docker engine, which
# this starts (scripts/docker-engine.sh) unless DOCKER_HOST is set, and stops again if it started it.
# Exit status: dlock_soak's (0: every check passed; with --negative-control: the checks failed, as
# they must).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
soak="$root/build/tools/soak/dlock_soak"
[ -x "$soak" ] || { echo "soak.sh: $soak is missing: build with the tests first" >&2; exit 2; }
args=("$@")
have_out=false
for a in "${args[@]}"; do [ "$a" = "--out" ] && have_out=true; done
if ! $have_out; then
  seed=1
  for ((i = 0; i + 1 < ${#args[@]}; i++)); do [ "${args[$i]}" = "--seed" ] && seed=${args[$((i + 1))]}; done
  args+=(--out "$root/build/soak-$seed")
fi
started=false
if [ -z "${DOCKER_HOST:-}" ]; then
  trap 'bash "$root/scripts/docker-engine.sh" stop' EXIT
  DOCKER_HOST=$(bash "$root/scripts/docker-engine.sh" start)
  export DOCKER_HOST
  started=true
fi
bash "$root/scripts/docker-engine.sh" images
status=0
DLOCK_TESTING_BACKEND=docker timeout -k 10 3600 "$soak" "${args[@]}" || status=$?
if $started; then
  bash "$root/scripts/docker-engine.sh" stop
  trap - EXIT
fi
exit $status
