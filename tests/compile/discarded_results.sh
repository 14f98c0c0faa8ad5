#!/usr/bin/env bash
# Checks that ignoring a result dlock marks [[nodiscard]] does not compile under -Werror
# (discarded_results.cpp says how): every line of <source> that starts with DISCARDED must have an
# "ignoring return value" diagnostic of its own, and the control build must compile cleanly.
#
#   discarded_results.sh <source> <compiler> <flags...>
set -uo pipefail
source=$1
compiler=$2
shift 2
if ! command -v "$compiler" >/dev/null; then
  echo "discarded_results: compiler '$compiler' not found" >&2
  exit 1
fi
if ! control=$("$compiler" "$@" -DDLOCK_DISCARD_CONTROL "$source" 2>&1); then
  printf '%s\n' "$control"
  echo "discarded_results: the control build (results cast to void) does not compile: fix that first" >&2
  exit 1
fi
# Every diagnostic is wanted: clang stops after 20 errors unless told otherwise, GCC does not.
no_limit=()
if "$compiler" --version 2>/dev/null | grep -q clang; then no_limit=(-ferror-limit=0); fi
output=$("$compiler" "$@" "${no_limit[@]}" "$source" 2>&1)
failed=0
checked=0
while IFS=: read -r line text; do
  checked=$((checked + 1))
  call=$(printf '%s' "$text" | sed 's/^ *DISCARDED *//')
  if printf '%s\n' "$output" | grep -Eq "^[^:]*$(basename "$source"):$line:[0-9]+: error: ignoring return value"; then
    echo "ok    line $line: $call"
  else
    echo "FAIL  line $line: $call  (compiles although its result is discarded)"
    failed=$((failed + 1))
  fi
done < <(grep -n '^ *DISCARDED ' "$source")
echo "$checked discarded results checked with $(basename "$compiler"), $failed accepted"
[ "$checked" -gt 0 ] && [ "$failed" -eq 0 ]
