# docs/OPERATIONS.md's `dlockctl lock` and `read-lock` in a script, run against the test's server
# with nobody else on the locks: each command must run under its lock, with the variables set,
# and the script must take the 0 branch of its `case`.
set -eu
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin"
# The programs the snippet runs: each notes what it saw.
cat >"$work/bin/nightly-report" <<'EOF'
#!/bin/sh
echo "report $DLOCK_FENCING_TOKEN $DLOCK_PATH" >>"$DLOCK_DOCS_LOG"
EOF
cat >"$work/bin/export-catalogue" <<'EOF'
#!/bin/sh
echo "export $DLOCK_FENCING_TOKEN $DLOCK_PATH" >>"$DLOCK_DOCS_LOG"
EOF
chmod +x "$work/bin/nightly-report" "$work/bin/export-catalogue"
PATH="$work/bin:$PATH"
DLOCK_DOCS_LOG="$work/log"
export DLOCK_DOCS_LOG
# @snippet
cat "$work/log"
runs=$(grep -c '^report [1-9][0-9]* /locks/nightly-report$' "$work/log" || true)
exports=$(grep -c '^export [1-9][0-9]* /locks/catalogue$' "$work/log" || true)
if [ "$runs" != 2 ] || [ "$exports" != 1 ]; then
  echo "expected 2 reports and 1 export, each under its lock with a token; got $runs and $exports" >&2
  exit 1
fi
first=$(sed -n 1p "$work/log" | cut -d' ' -f2)
last=$(sed -n 3p "$work/log" | cut -d' ' -f2)
if [ "$last" -le "$first" ]; then
  echo "the second report's token ($last) is not larger than the first's ($first)" >&2
  exit 1
fi
echo "dlockctl lock and read-lock ran each command under its lock"
