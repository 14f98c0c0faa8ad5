#!/usr/bin/env bash
# Checks that each marked line of a compile test draws the diagnostic it is there for, an error
# under -Werror: every line of <source> that starts with <MARKER> must have a diagnostic of its own
# matching <diagnostic> (an extended regex), and the control build (<source> compiled with
# <control-flag>) must compile cleanly, which shows that the errors come from the marked lines and
# from nothing else.
#
#   marked_lines.sh <MARKER> <diagnostic> <control-flag> <source> <compiler> <flags...>
#
# discarded_results.cpp: DISCARDED lines ignore a [[nodiscard]] result ("ignoring return value");
# deprecated_names.cpp: DEPRECATED lines use a name kept for one release ("is deprecated").
set -uo pipefail
marker=$1
diagnostic=$2
control_flag=$3
source=$4
compiler=$5
shift 5
if ! command -v "$compiler" >/dev/null; then
  echo "marked_lines: compiler '$compiler' not found" >&2
  exit 1
fi
if ! control=$("$compiler" "$@" "$control_flag" "$source" 2>&1); then
  printf '%s\n' "$control"
  echo "marked_lines: the control build ($control_flag) does not compile: fix that first" >&2
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
  call=$(printf '%s' "$text" | sed "s/^ *$marker *//")
  if printf '%s\n' "$output" | grep -Eq "^[^:]*$(basename "$source"):$line:[0-9]+: error: .*$diagnostic"; then
    echo "ok    line $line: $call"
  else
    echo "FAIL  line $line: $call  (compiles without the diagnostic '$diagnostic')"
    failed=$((failed + 1))
  fi
done < <(grep -n "^ *$marker " "$source")
echo "$checked $marker lines checked with $(basename "$compiler"), $failed accepted"
[ "$checked" -gt 0 ] && [ "$failed" -eq 0 ]
