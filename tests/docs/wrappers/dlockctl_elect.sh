# docs/OPERATIONS.md's `dlockctl elect` in a script, run against the test's server where nobody
# else takes part in the election: dlockctl must lead at once, run the command with the term's
# variables, and the script must take the 0 branch of its `case`.
set -eu
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin"
cat >"$work/bin/run-scheduler" <<'END'
#!/bin/sh
echo "scheduler $DLOCK_FENCING_TOKEN $DLOCK_PATH ${DLOCK_NODE##*/}" >>"$DLOCK_DOCS_LOG"
END
chmod +x "$work/bin/run-scheduler"
PATH="$work/bin:$PATH"
DLOCK_DOCS_LOG="$work/log"
export DLOCK_DOCS_LOG
# @snippet
cat "$work/log"
if ! grep -q '^scheduler [1-9][0-9]* /elections/scheduler _c_.*-lock-[0-9]*$' "$work/log"; then
  echo "expected run-scheduler to run once as leader, with the term's token and its LeaderSelector (lock-) node" >&2
  exit 1
fi
echo "dlockctl elect ran the command while leader"
