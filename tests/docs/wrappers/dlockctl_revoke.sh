# docs/OPERATIONS.md's `dlockctl revoke` in a script, run against the test's server while a
# `dlockctl lock --revocable` holds /locks/backfill (for 10 s at most): the loop must find its node
# and ask it, and that dlockctl must stop its command and exit 122.
set -eu
work=$(mktemp -d)
holder=""
trap '[ -z "$holder" ] || kill "$holder" 2>/dev/null || true; rm -rf "$work"' EXIT
dlockctl --connect "$DLOCK_SNIPPET_CONNECT" lock /locks/backfill --revocable -- \
  sh -c 'trap "echo TERM >\"$1/term\"; exit 0" TERM; touch "$1/started"
         i=0; while [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done' sh "$work" &
holder=$!
i=0
while [ ! -e "$work/started" ]; do
  i=$((i + 1))
  if [ $i -gt 100 ]; then echo "the holder never ran its command" >&2; exit 1; fi
  sleep 0.1
done
# @snippet
status=0
wait "$holder" || status=$?
holder=""
if [ "$status" != 122 ] || [ "$(cat "$work/term" 2>/dev/null)" != TERM ]; then
  echo "expected the holder's command stopped with SIGTERM and its dlockctl's exit 122; got $status" >&2
  exit 1
fi
echo "dlockctl revoke reached the holder: its command stopped, exit 122"
