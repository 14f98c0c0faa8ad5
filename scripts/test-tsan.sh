#!/usr/bin/env bash
# dlock_tests under ThreadSanitizer (build-tsan, -DDLOCK_TSAN=ON): every test but those that run
# other programs built in the tree (the account service, the interop peers, dlockctl), which the
# TSan tree does not build. Fails on any ThreadSanitizer report not in tests/tsan.supp.
#
# Not in the test command: it costs about 6 minutes on 2 cores (3.5 to build, 2.5 to run) beyond
# the 20-minute budget. Run it by hand after changing anything threads share.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDLOCK_TSAN=ON >/dev/null
cmake --build build-tsan -j"$(nproc)" --target dlock_tests dlock_test_worker dlock_static_init_session
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# exitcode=66: the test process fails when TSan reported anything, even if every test passed.
set +e
TSAN_OPTIONS="suppressions=$PWD/tests/tsan.supp:halt_on_error=0:exitcode=66:second_deadlock_stack=1:report_signal_unsafe=0" \
  timeout -k 10 1200 build-tsan/tests/dlock_tests --gtest_filter='-AccountService*:Compose*:Interop*:Dlockctl*:Inspect*' >"$log" 2>&1
status=$?
set -e
grep -E '^\[  (PASSED|FAILED)|FAILED \]' "$log" || true
reports=$(grep -c 'WARNING: ThreadSanitizer' "$log" || true)
echo "test-tsan: ${reports} ThreadSanitizer report(s); dlock_tests exited ${status}"
if [ "$reports" != 0 ]; then
  grep -A30 'WARNING: ThreadSanitizer' "$log" | head -120
  # Also a report from a child process (a worker the tests start), whose exit status is not ours.
  [ "$status" != 0 ] || status=66
fi
exit "$status"
