#!/usr/bin/env bash
# Installs what dlock needs from Debian 12's packages:
#   install-deps.sh          everything the build and the tests need (the test command's list)
#   install-deps.sh --demo   only what the demo needs: the compiler, CMake, the ZooKeeper server
#                            and C client, Boost and nlohmann/json
set -euo pipefail
demo_packages=(build-essential cmake libzookeeper-st-dev zookeeper libboost1.81-dev nlohmann-json3-dev)
packages=(
  build-essential cmake            # g++ 12, CMake 3.25
  pkgconf                          # pkg-config: the packaging test builds a consumer with dlock.pc
  ccache                           # the test command compiles through it: a later run only what changed
  libzookeeper-st-dev              # ZooKeeper C client (its single-threaded library; replaces libzookeeper-mt-dev)
  libzookeeper-mt2                 # its multi-threaded library: the benchmark's floor-pipelined
  zookeeper                        # the real server the tests and the demo start (brings Java)
  nlohmann-json3-dev               # lock node data
  libcli11-dev                     # dlockctl's command line
  libgtest-dev                     # GoogleTest
  openjdk-17-jdk-headless          # javac for the Curator interop peer
  libcurator-recipes-java          # Apache Curator 5.4: interop peer and benchmark baseline
  python3-kazoo                    # kazoo 2.8 (for /usr/bin/python3): interop peer and baseline
  python3-prometheus-client        # its text-format parser checks dlock's /metrics exposition in the tests
  libboost1.81-dev                 # Boost.PFR / Describe (key builder), Beast (example service)
  libpq-dev postgresql             # the example service's database
  libpqxx-dev                      # dlock/postgres/pqxx.hpp and its test
  libsqlite3-dev                   # dlock::sqlite (fencing in SQLite) and its tests
  libmariadb-dev mariadb-server    # dlock::mariadb (MariaDB Connector/C) and the server its tests start
  gnuplot-nox                      # benchmark chart
  openssl                          # docs/SECURITY.md's digest command (its snippet is run)
  clang-14 libclang-rt-14-dev      # tests/fuzz: libFuzzer (libclang_rt.fuzzer is only recommended by clang-14)
  clang-format-14                  # scripts/format.sh: the formatting check in the test command
  docker.io docker-compose debootstrap  # the testing kit's Docker backend: an engine the tests start, images built locally
)
case "${1:-}" in
  "") ;;
  --demo) packages=("${demo_packages[@]}") ;;
  *) echo "usage: $0 [--demo]" >&2; exit 2 ;;
esac
if [ "$(id -u)" -ne 0 ]; then sudo=sudo; else sudo=; fi
export DEBIAN_FRONTEND=noninteractive
# Always refresh the package lists first; a stale or missing list makes installs fail.
if ! $sudo apt-get update -qq; then
  echo "install-deps: apt-get update failed; trying with the lists this machine has" >&2
fi
$sudo apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
[ "${1:-}" != --demo ] || exit 0  # no MariaDB server to stop
# mariadb-server's scripts start a system MariaDB where services may start (systemd, sysvinit). The
# tests start servers of their own (dlock::testing::MariaDbServer) and use none: stop it, and keep
# it from starting at boot. (Where services may not start, as in a container, there is none.)
if [ -d /run/systemd/system ]; then
  $sudo systemctl disable --now mariadb.service >/dev/null 2>&1 || true
else
  $sudo invoke-rc.d mariadb stop >/dev/null 2>&1 || true
  $sudo update-rc.d mariadb disable >/dev/null 2>&1 || true
fi
