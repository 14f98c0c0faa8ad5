# docs/OPERATIONS.md's `dlockctl semaphore` in a script, run against the test's server with nobody
# else on the semaphores: each command must run under its leases, with the variables set (two
# nodes for --count 2).
set -eu
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin"
# The programs the snippet runs: each notes what it saw.
cat >"$work/bin/reindex-shard" <<'END'
#!/bin/sh
echo "reindex $DLOCK_FENCING_TOKEN $DLOCK_PATH $(printf '%s\n' "$DLOCK_NODES" | grep -c /leases/)" >>"$DLOCK_DOCS_LOG"
END
cat >"$work/bin/bulk-load" <<'END'
#!/bin/sh
echo "bulk-load $DLOCK_FENCING_TOKEN $DLOCK_PATH $(printf '%s\n' "$DLOCK_NODES" | grep -c /leases/)" >>"$DLOCK_DOCS_LOG"
END
chmod +x "$work/bin/reindex-shard" "$work/bin/bulk-load"
PATH="$work/bin:$PATH"
DLOCK_DOCS_LOG="$work/log"
export DLOCK_DOCS_LOG
# @snippet
cat "$work/log"
if ! grep -q '^reindex [1-9][0-9]* /semaphores/reindex 1$' "$work/log" ||
   ! grep -q '^bulk-load [1-9][0-9]* /semaphores/db-connections 2$' "$work/log"; then
  echo "expected reindex-shard under 1 lease and bulk-load under 2, each with a token" >&2
  exit 1
fi
echo "dlockctl semaphore ran each command under its leases"
