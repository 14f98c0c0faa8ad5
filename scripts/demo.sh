#!/usr/bin/env bash
# The demo command: installs only what the demo needs, builds the library and the demo (nothing
# else), and runs several processes x threads incrementing a counter in a plain file, with and
# without a dlock::Mutex. The demo starts its own ZooKeeper server on a free loopback port and
# stops it when done. Arguments go to the demo: [processes] [threads] [increments-per-thread].
# Its source, the lock code included, is examples/counter_demo/counter_demo.cpp.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\ndemo: %s\n' "$*"; }
step "installing the compiler, CMake, ZooKeeper (server and C client), Boost and nlohmann/json (apt-get)"
scripts/install-deps.sh --demo
step "configuring the library and the demo only, in build-demo/"
cmake -S . -B build-demo -DCMAKE_BUILD_TYPE=Release -DDLOCK_BUILD_TESTS=OFF -DDLOCK_BUILD_EXAMPLES=OFF \
  -DDLOCK_BUILD_DEMO=ON >/dev/null
step "building (a few minutes on 2 cores the first time; seconds after)"
cmake --build build-demo -j"$(nproc)" --target counter_demo | { grep -E '^\[ *[0-9]+%\] (Linking|Built target)' || true; }
step "running examples/counter_demo/counter_demo.cpp"
build-demo/examples/counter_demo/counter_demo "$@"
