#!/usr/bin/env bash
# Every translation unit of the library (src/, recipes/) through clang's thread-safety analysis
# (-Wthread-safety -Werror): a member read or written outside the mutex it is DLOCK_GUARDED_BY,
# or a DLOCK_REQUIRES function called without its mutex, fails this test. Syntax only: it writes
# nothing. Two at a time, as the machine has two cores. DLOCK_COMPILER_LAUNCHER (ccache, in the
# test command) keeps the verdict of a unit whose every input is unchanged.
#
#   thread_safety.sh <repository root> <clang++> <flags...>
#   thread_safety.sh --control <file.cpp> <clang++> <flags...>   one file, for the negative control
set -euo pipefail
if [ "$1" = --control ]; then
  file=$2 compiler=$3
  shift 3
  exec "$compiler" -fsyntax-only -Wthread-safety -Werror "$@" "$file"
fi
root=$1 compiler=$2
shift 2
mapfile -t files < <(cd "$root" && find src recipes -name '*.cpp' | sort)
printf '%s\n' "${files[@]}" |
  (cd "$root" && xargs -P 2 -I{} ${DLOCK_COMPILER_LAUNCHER:-} "$compiler" -fsyntax-only -Wthread-safety -Werror "$@" {})
echo "thread_safety: ${#files[@]} translation units pass clang's -Wthread-safety"
