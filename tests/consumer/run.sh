#!/usr/bin/env bash
# The README's "Use it in your project", step by step, as a user would run it: a library-only
# build of the source tree (no tests, no examples), `cmake --install` into a scratch prefix, then
# tests/consumer (find_package(dlock COMPONENTS testing): dlock::dlock, on the compiler's default C++
# standard, and an integration test on dlock::testing + GoogleTest) configured against that
# prefix, built and run.
#
#   run.sh <dlock source dir> <scratch dir>
set -euo pipefail
source_dir=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
cmake -S "$source_dir" -B "$work/dlock-build" -DCMAKE_BUILD_TYPE=Release \
  -DDLOCK_BUILD_TESTS=OFF -DDLOCK_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$work/dlock-build" -j"$(nproc)"
cmake --install "$work/dlock-build" --prefix "$work/prefix" >/dev/null
cmake -S "$here" -B "$work/consumer-build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer-build"
"$work/consumer-build/consumer"
"$work/consumer-build/consumer_testing"
