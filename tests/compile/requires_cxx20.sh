#!/usr/bin/env bash
# Compiles every public header alone as C++17 and checks that a header which cannot compile there
# says why in its FIRST error: dlock's "requires C++20" message, not a puzzle about char8_t or
# concepts further down. (A header that happens to compile as C++17 passes; dlock/dlock.hpp, which
# includes everything, must not.)
#
#   requires_cxx20.sh <include dir> <compiler> <flags...>    (flags without -std)
set -uo pipefail
include_dir=$1
compiler=$2
shift 2
if ! command -v "$compiler" >/dev/null; then
  echo "requires_cxx20: compiler '$compiler' not found" >&2
  exit 1
fi
expected='dlock requires C\+\+20'
failed=0
for header in "$include_dir"/dlock/*.hpp; do
  name=dlock/$(basename "$header")
  if output=$(printf '#include <%s>\n' "$name" | "$compiler" -std=c++17 "$@" -x c++ - 2>&1); then
    if [ "$name" = dlock/dlock.hpp ]; then
      echo "FAIL  $name compiles as C++17: this check no longer tests anything"
      failed=$((failed + 1))
    else
      echo "ok    $name (compiles as C++17)"
    fi
    continue
  fi
  first=$(printf '%s\n' "$output" | grep -m1 -E ': (fatal )?error:' || true)
  if printf '%s' "$first" | grep -Eq "$expected"; then
    echo "ok    $name"
  else
    echo "FAIL  $name: first error is not the C++20 requirement:"
    echo "      $first"
    failed=$((failed + 1))
  fi
done
[ "$failed" -eq 0 ]
