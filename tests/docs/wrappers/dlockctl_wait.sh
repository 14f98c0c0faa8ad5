# docs/OPERATIONS.md's `dlockctl wait` in a script, run against the test's server, where nobody
# holds or waits for /locks/reindex: `wait` must return 0 at once and the job must run.
set -eu
ran=no
run_job() { ran=yes; }
# @snippet
if [ "$ran" != yes ]; then
  echo "run_job did not run: dlockctl wait did not answer 0 for a free lock" >&2
  exit 1
fi
echo "dlockctl wait answered 0 for a free lock; the job ran"
