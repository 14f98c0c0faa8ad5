# docs/OPERATIONS.md's `dlockctl lock --revocable` in a script, run against the test's server. The
# backfill program plays the operator too: once running, it asks for its own lock node to be
# revoked (`dlockctl revoke "$DLOCK_NODE"`), and stops on SIGTERM. The script must take the 122
# branch of its `case`.
set -eu
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin"
cat >"$work/bin/backfill" <<'END'
#!/bin/sh
trap 'echo "stopped on TERM" >>"$DLOCK_DOCS_LOG"; exit 0' TERM
echo "backfill $DLOCK_FENCING_TOKEN $DLOCK_PATH" >>"$DLOCK_DOCS_LOG"
dlockctl --connect "$DLOCK_SNIPPET_CONNECT" revoke "$DLOCK_NODE" >>"$DLOCK_DOCS_LOG"
i=0
while [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
echo "never asked to stop" >>"$DLOCK_DOCS_LOG"
END
chmod +x "$work/bin/backfill"
PATH="$work/bin:$PATH"
DLOCK_DOCS_LOG="$work/log"
export DLOCK_DOCS_LOG
# @snippet
cat "$work/log"
if [ "$status" != 122 ] || ! grep -q '^stopped on TERM$' "$work/log"; then
  echo "expected the backfill stopped with SIGTERM and dlockctl's exit 122; got $status" >&2
  exit 1
fi
echo "dlockctl lock --revocable stopped the backfill when asked, exit 122"
