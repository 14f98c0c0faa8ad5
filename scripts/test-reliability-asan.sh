#!/usr/bin/env bash
# The 3-node ensemble fault scenarios under AddressSanitizer + UndefinedBehaviorSanitizer (about
# 75 s once built). Not in the test command, which runs them without the sanitizers, to keep it
# within its time budget. Run after scripts/test.sh (or it builds build-asan itself).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DDLOCK_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$(nproc)" --target dlock_reliability_tests
(cd build-asan && ctest --output-on-failure -L reliability)
