#!/usr/bin/env bash
# GETTING-STARTED's "Use it in your own project", step by step, as a user would run it, and the two
# other ways a project takes dlock: pkg-config on the installed dlock.pc, and FetchContent (dlock as a
# subproject, whose target list must hold the library only). First: a library-only
# build of the source tree (no tests, no examples), `cmake --install` into a scratch prefix, then
# tests/consumer (find_package(dlock COMPONENTS testing postgres sqlite mariadb): dlock::dlock, on
# the compiler's default C++ standard, integration tests on dlock::testing + GoogleTest, and
# docs/FENCING.md's programs on dlock::postgres, dlock::sqlite and dlock::mariadb) configured against that prefix,
# built and run; and the installed library carries none of the tests' switches. The consumer's CMake lines and TESTING.md's test are the docs' own blocks, which
# tests/docs/snippets.py writes into a copy of tests/consumer.
#
# The programs run with a TMPDIR of their own, which must be empty once they are done: the kit's
# servers and the tests' TempDirs remove what they made.
#
#   run.sh <dlock source dir> <scratch dir> <python3 (Debian's, from scripts/dependencies.list)>
set -euo pipefail
source_dir=$1
work=$2
python3=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
cmake -S "$source_dir" -B "$work/dlock-build" -DCMAKE_BUILD_TYPE=Release \
  -DDLOCK_BUILD_TESTS=OFF -DDLOCK_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$work/dlock-build" -j"$(nproc)"
cmake --install "$work/dlock-build" --prefix "$work/prefix" >/dev/null
# The tests' guarantee switches (DLOCK_TEST_HOOKS) are compiled only into a build with the tests:
# the installed library must not carry one.
library=$(find "$work/prefix" -name libdlock.a | head -n 1)
hooks=$(nm -C "$library" | grep -c 'test_hooks::' || true)
if [ -z "$library" ] || [ "$hooks" != 0 ]; then
  echo "consumer_package: the installed libdlock.a carries $hooks test_hooks symbols" >&2
  exit 1
fi
mkdir -p "$work/consumer-src"
cp "$here/CMakeLists.txt" "$here/main.cpp" "$here/testing_main.cpp" "$work/consumer-src/"
"$python3" "$source_dir/tests/docs/snippets.py" consumer "$work/consumer-src" --repo "$source_dir"
cmake -S "$work/consumer-src" -B "$work/consumer-build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer-build"
mkdir -p "$work/tmp"
for program in app consumer_testing my_service_tests postgres_app sqlite_app mariadb_app; do
  # Bounded: a hang fails the test instead of outliving it with its servers.
  TMPDIR="$work/tmp" timeout -k 10 300 "$work/consumer-build/$program"
done
# pkg-config: the installed dlock.pc is all a Makefile needs.
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
[ "$(pkg-config --modversion dlock)" = "$(sed -n 's/^project(dlock VERSION \([0-9.]*\).*/\1/p' "$source_dir/CMakeLists.txt")" ] ||
  { echo "consumer_package: dlock.pc's version is not the project's" >&2; exit 1; }
# shellcheck disable=SC2046  # the flags are words
c++ -o "$work/pkg_config_app" "$here/main.cpp" $(pkg-config --cflags --libs dlock)
TMPDIR="$work/tmp" timeout -k 10 60 "$work/pkg_config_app"
# FetchContent from this checkout: dlock as a subproject builds its library only.
cmake -S "$here/fetchcontent" -B "$work/fetchcontent-build" -DFETCHCONTENT_SOURCE_DIR_DLOCK="$source_dir" \
  -DFETCHCONTENT_FULLY_DISCONNECTED=ON >/dev/null
targets=$(cmake --build "$work/fetchcontent-build" --target help | sed -n 's/^\.\.\. //p' | sort | tr '\n' ' ')
echo "consumer_package: FetchContent targets: $targets"
for unwanted in dlock_tests dlockctl dlock_testing account_service with_zookeeper; do
  case " $targets " in *" $unwanted "*)
    echo "consumer_package: dlock as a subproject builds $unwanted" >&2
    exit 1
    ;;
  esac
done
# Configured, not built: compiling the library a third time would double this test's time, and the
# same sources are compiled by the library-only build above.
left=$(find "$work/tmp" -mindepth 1 -maxdepth 1)
if [ -n "$left" ]; then
  echo "consumer_package: left in TMPDIR by the programs above:" >&2
  echo "$left" >&2
  exit 1
fi
