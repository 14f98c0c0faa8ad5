#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each for N seconds (default 20):
#   bash tests/fuzz/run.sh          # 20 s per target
#   bash tests/fuzz/run.sh 600      # a longer run by hand
# Targets: fuzz_lock_path (src/base/path.cpp), fuzz_key_codec (keygen/key_encoding.cpp), fuzz_acl
# (Acl::parse, src/session/security.cpp), fuzz_connect_string (src/session/connect_string.cpp), fuzz_contenders (other clients' node names,
# recipes/queue/contender.cpp). They are
# compiled directly from the few library sources they need, with ASan + UBSan + the fuzzer, into
# $DLOCK_FUZZ_BUILD_DIR (default build-fuzz/). Each run starts from the committed seeds in
# tests/fuzz/corpus/<target>/ (read only) plus what earlier runs found in the build dir. Exits
# non-zero on the first crash, sanitizer report or failed oracle; the input that caused it is
# written to <build dir>/artifacts/ and the command to replay it is printed.
set -euo pipefail
seconds=${1:-20}
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [ "$seconds" -lt 1 ]; then
  echo "usage: $0 [seconds per target, >= 1]" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${DLOCK_FUZZ_BUILD_DIR:-$root/build-fuzz}
mkdir -p "$build"
build=$(cd "$build" && pwd)

cxx=${CXX_FUZZ:-}
if [ -z "$cxx" ]; then
  source "$root/scripts/dependencies.sh"
  for candidate in "$(dependency clang++)" clang++; do
    if command -v "$candidate" >/dev/null; then cxx=$candidate; break; fi
  done
fi
if [ -z "$cxx" ]; then
  echo "fuzz: clang++ not found (scripts/install-deps.sh installs clang-14 and libclang-rt-14-dev)" >&2
  exit 1
fi

flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
       -fno-omit-frame-pointer -Wall -Wextra -Werror
       -I"$root/include" -I"$root")
# What each target needs: the code under test and error.cpp (dlock_category; zookeeper_category
# calls the C client's zerror, hence -lzookeeper_st).
declare -A sources=(
  [fuzz_lock_path]="$root/src/base/path.cpp $root/src/base/error.cpp"
  [fuzz_key_codec]="$root/keygen/key_encoding.cpp $root/src/base/error.cpp"
  [fuzz_acl]="$root/src/session/security.cpp $root/src/base/error.cpp"
  [fuzz_connect_string]="$root/src/session/connect_string.cpp $root/src/base/error.cpp"
  [fuzz_contenders]="$root/recipes/queue/contender.cpp"
)
declare -A max_len=([fuzz_lock_path]=2048 [fuzz_key_codec]=1024 [fuzz_acl]=1024 [fuzz_connect_string]=1024 [fuzz_contenders]=4096)
targets=(fuzz_lock_path fuzz_key_codec fuzz_acl fuzz_connect_string fuzz_contenders)

# Build them at once (two cores).
pids=()
for t in "${targets[@]}"; do
  # shellcheck disable=SC2086
  "$cxx" "${flags[@]}" -o "$build/$t" "$root/tests/fuzz/$t.cpp" ${sources[$t]} -lzookeeper_st \
    >"$build/$t.build.log" 2>&1 &
  pids+=($!)
done
for i in "${!targets[@]}"; do
  if ! wait "${pids[$i]}"; then
    cat "$build/${targets[$i]}.build.log" >&2
    echo "fuzz: building ${targets[$i]} failed" >&2
    exit 1
  fi
done

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
for t in "${targets[@]}"; do
  seeds=$root/tests/fuzz/corpus/$t
  work=$build/corpus/$t       # new inputs go here, never into the committed seeds
  mkdir -p "$work" "$build/artifacts"
  rm -f "$build/artifacts/$t-"*
  echo "fuzz: $t for ${seconds} s"
  if "$build/$t" -max_total_time="$seconds" -max_len="${max_len[$t]}" -timeout=10 -rss_limit_mb=2048 \
       -artifact_prefix="$build/artifacts/$t-" -print_final_stats=1 \
       "$work" "$seeds" >"$build/$t.log" 2>&1; then
    echo "fuzz: $t ok: $(grep -E '^stat::number_of_executed_units' "$build/$t.log" | awk '{print $2}') runs," \
         "$(find "$work" -type f | wc -l) corpus files"
  else
    status=1
    tail -n 60 "$build/$t.log" >&2
    echo "fuzz: $t FAILED (full log: $build/$t.log)" >&2
    for a in "$build/artifacts/$t-"*; do
      [ -e "$a" ] && echo "fuzz: replay with: $build/$t $a" >&2
    done
  fi
done
exit $status
