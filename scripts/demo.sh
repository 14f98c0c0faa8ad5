#!/usr/bin/env bash
# The demo command: installs what is needed, builds, starts a local ZooKeeper, and runs several
# processes x threads incrementing a counter in a plain file, with and without the lock.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target counter_demo
build/examples/counter_demo "$@"
