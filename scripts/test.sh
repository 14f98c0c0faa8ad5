#!/usr/bin/env bash
# The test command: installs what is needed, builds, and runs the whole suite against a real
# ZooKeeper server (started and stopped by the tests), then once more under ASan + UBSan.
#
#   bash scripts/test.sh            everything (the README's test command, and CI's)
#   bash scripts/test.sh --quick    for contributors between changes: the Release build and the
#                                   suite's single-server tests only (no interop peers, ensembles,
#                                   Docker, compile checks, sanitizers or fuzzing); a few minutes
set -euo pipefail
cd "$(dirname "$0")/.."
quick=false
case "${1:-}" in
  "") ;;
  --quick) quick=true ;;
  *) echo "usage: $0 [--quick]" >&2; exit 2 ;;
esac
# First, since it takes no time: nothing tracked may point outside the repository.
bash scripts/check-standalone.sh
scripts/install-deps.sh
# Every program, jar, module and image the tests use is here (scripts/dependencies.list), or this
# stops in a second naming what is missing and its Debian package.
bash scripts/check-deps.sh
jobs=$(nproc)
# Every compile of the test command goes through ccache (CMake takes the launcher from the
# environment: both builds, the packaging test's nested builds, the compile-only checks and the
# documentation's snippets). Its cache is kept on this machine like the Docker images, in
# /var/cache/dlock-ccache (at most 5 GB), so a later run compiles only what changed; paths are
# hashed relative to the repository, so a fresh clone elsewhere finds what an earlier clone
# compiled. A failed compile is never kept: the checks that must fail to compile always run.
# (Sloppiness: the precompiled header's defines and time macros, which ccache needs to cache units
# that use it; nothing in the tree reads __DATE__ or __TIME__.)
export CCACHE_DIR=${CCACHE_DIR:-/var/cache/dlock-ccache} CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE=5G \
  CCACHE_SLOPPINESS=pch_defines,time_macros
export CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_C_COMPILER_LAUNCHER=ccache
ccache --zero-stats >/dev/null
# Where the 30-minute budget goes: each step's end, in seconds since the start.
mark() { echo "test.sh: $1 at ${SECONDS} s"; }
mark "dependencies"
# ctest in a build directory, and on failure, last, each failed assertion with the lines after it:
# --output-on-failure prints a failed suite's whole output, and its reason can sit thousands of
# lines above the end, past what a CI page keeps.
ctest_in() {
  local dir=$1
  shift
  if (cd "$dir" && ctest "$@"); then return 0; fi
  echo "test.sh: the failed assertions in $dir:"
  grep -E -A8 ': Failure$' "$dir/Testing/Temporary/LastTest.log" | head -n 120 || true
  return 1
}

if $quick; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j"$jobs"
  mark "build"
  # The suite in two processes side by side (GoogleTest's sharding), each with its own server.
  # A background job of a script starts with SIGINT and SIGQUIT ignored, and the dlockctl it runs
  # would keep them so (as it does under nohup): the tests that stop it with SIGINT need the
  # default back (env --default-signal).
  filter='-Interop*:*Interop.*:Ensemble.*:Nemesis.*:ComposeE2E.*:*Docker*'
  logs=$(mktemp -d)
  pids=()
  for shard in 0 1; do
    GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=$shard env --default-signal=INT,QUIT timeout -k 10 900 \
      build/tests/dlock_tests --gtest_color=no --gtest_brief=1 \
      --gtest_filter="$filter" >"$logs/shard-$shard.log" 2>&1 &
    pids+=($!)
  done
  status=0
  for shard in 0 1; do
    if ! wait "${pids[$shard]}"; then
      status=1
      grep -E -A4 ': Failure$' "$logs/shard-$shard.log" | head -n 60 || true
      grep -E '^\[  FAILED  \]' "$logs/shard-$shard.log" || true
    fi
    grep -E '^\[==========\]|^\[  PASSED  \]' "$logs/shard-$shard.log" | sed "s/^/shard $shard: /" || true
  done
  build/tests/keygen/dlock_key_tests --gtest_color=no --gtest_brief=1 | tail -n 2 || status=1
  if [ "$status" -eq 0 ]; then rm -rf "$logs"; else echo "test.sh --quick: the shards' output: $logs"; fi
  mark "quick suite"
  [ "$status" -eq 0 ] && echo "test.sh --quick: passed (the full command: bash scripts/test.sh)"
  exit "$status"
fi

# The fresh-machine check: install-deps.sh run in a pristine Debian 12 root installs everything
# the list names (so a package installed by hand on this machine cannot hide a missing install
# step), and, as its negative control, with docker-compose left out the check fails naming it.
# About 2.5 minutes (3 the first time on a machine: debootstrap). Its verdict depends only on the
# scripts and the list below, so a pass is kept for a week (in /var/cache/dlock-rootfs): a run
# with all of them unchanged says so and does not repeat it. (After that week it runs again, as
# Debian's updates may have moved a package.)
fresh_inputs=(scripts/install-deps.sh scripts/check-deps.sh scripts/dependencies.list scripts/dependencies.sh
              scripts/debian-rootfs.sh scripts/fresh-root.sh scripts/fresh-machine-check.sh)
fresh_passed=/var/cache/dlock-rootfs/passed-$(cat "${fresh_inputs[@]}" | sha256sum | cut -c1-16)
if [ -n "$(find "$fresh_passed" -mtime -7 2>/dev/null)" ]; then
  echo "fresh-machine check: passed on $(date -r "$fresh_passed" '+%F %R') for these install scripts; not repeated"
else
  bash scripts/fresh-machine-check.sh --negative-control docker-compose
  mkdir -p "$(dirname "$fresh_passed")" && touch "$fresh_passed"
fi
mark "fresh-machine check"

# -O3 (Release), as users and bench/run.sh build it: GCC 12 warns there about code that -O2
# accepts, and -Werror turns that into a broken build. The benchmark programs are built too.
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DDLOCK_BUILD_BENCH=ON >/dev/null
cmake --build build -j"$jobs"
# Everything, the 3-node ensemble fault scenarios (label "reliability", about a minute, run alone:
# RUN_SERIAL) included, and the 3-member ensemble suites (dlock_tests_ensembles, also alone).
# One more at once than cores: the two suite shards mostly wait (for servers, timeouts, peers)
# while the compile checks and the packaging build want a core each (measured: 550 s with -j2).
ctest_in build -j"$((jobs + 1))" --output-on-failure
mark "build + suite"

# The Debian package (cpack -G DEB) installed with apt in a fresh Debian 12 root, and hello_lock
# built there against it with find_package and with pkg-config (about a minute and a half).
bash scripts/deb-check.sh build
mark "Debian package"

# The testing kit's Docker backend: the ensemble scenarios again, each member a container (and two
# partition scenarios); then docker-compose.yml itself brought up (3 ZooKeeper members,
# PostgreSQL, 3 account services), a login burst with the leader's container killed, 0
# duplicates, all removed (ComposeE2E). The
# engine is started here (no systemd; its own socket; the host network left as it was) and stopped
# by PID on exit; images are built from Debian's packages on first use and kept in
# /var/cache/dlock-docker for later runs on this machine (about 2 minutes and 1 GB from nothing).
trap 'bash scripts/docker-engine.sh stop' EXIT  # first: a start that fails half-way is stopped too
DOCKER_HOST=$(bash scripts/docker-engine.sh start)
export DOCKER_HOST
bash scripts/docker-engine.sh images
# Of the partition scenarios (Nemesis.*), the isolated leader (it shows the members' SOCKS
# gateways at work from containers) and expire_session: the rest would only add elections.
DLOCK_TESTING_BACKEND=docker timeout -k 10 600 build/tests/dlock_tests \
  --gtest_filter='Ensemble.*:TestingKit.*Docker*:ComposeE2E.*:Nemesis.AnIsolatedLeader*:Nemesis.ExpireSession*'
mark "Docker scenarios"
# The short soak (docs/RELIABILITY.md): dlock with and without hand-off, asynchronous takers and
# Curator on one lock of 5 members in containers, 60 s under a seeded nemesis (partitions by role,
# one-way cuts, pauses, a killed leader); the history checked (no overlap among valid holds,
# tokens in hold order, no ghost holder, no node left, every client back within 20 s of each
# heal). Then its negative controls, 15 s each without faults: exclusion off and token order off
# in the hand-off client, which the checks must catch. The long run: bash scripts/soak.sh --seconds 900.
soak_dir=$(mktemp -d)
bash scripts/soak.sh --seconds 60 --quiet-ms 3000 --fault-ms 4000 --seed 28 --out "$soak_dir/run"
for control in exclusion fencing; do
  bash scripts/soak.sh --seconds 15 --seed 28 --negative-control "$control" --out "$soak_dir/$control" |
    grep -E '^(FAIL|PASS|soak: negative control)'
done
rm -rf "$soak_dir"
bash scripts/docker-engine.sh stop
trap - EXIT
unset DOCKER_HOST
mark "Docker ensemble"

# The sanitizer build: the same suite, less the compile-only checks (the compilers' verdicts do
# not change with the build's sanitizers), the packaging check (it only re-tests the install),
# the ensemble fault scenarios and the example's integration test (run above; under the sanitizers
# they cost 100 s of the 20-minute budget: bash scripts/test-reliability-asan.sh runs the first by
# hand; the account service itself runs under the sanitizers in AccountServiceE2E), and the
# interop suites (the wire protocol with Curator's and kazoo's processes: tests/CMakeLists.txt).
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DDLOCK_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$jobs"
ctest_in build-asan -j"$jobs" --output-on-failure -LE 'compile|packaging|reliability|example'
mark "sanitizer build + suite"

# libFuzzer targets (lock path, key codec, ACL spec, connect string, other clients' node names),
# built with clang: 5 s each (a smoke run over the kept corpus). A longer run by hand:
# bash tests/fuzz/run.sh 600
bash tests/fuzz/run.sh 5
mark "fuzz"
# What the compiler cache saved (a cold one, on a new machine, costs about 20 minutes more).
ccache --show-stats | sed -n 's/^ *\(Hits\|Misses\): */test.sh: ccache \1 /p'

