#!/usr/bin/env bash
# Compiles every public header alone, as the only line of a translation unit, with the given
# compiler and flags (-fsyntax-only: nothing is written). A header that leans on something an
# earlier include happened to provide, or on a compiler's leniency (GCC checks a template's body
# only where it is used, clang where it is defined), fails here with the compiler's own message.
# Each translation unit is a file under ./headers_alone/<compiler>/ (the test's working directory,
# in the build tree), so that DLOCK_COMPILER_LAUNCHER (ccache, in the test command) can keep a
# verdict: a header whose every input is unchanged is not compiled again.
#
#   headers_alone.sh <include dir> <compiler> <flags...>
set -uo pipefail
include_dir=$1
compiler=$2
shift 2
if ! command -v "$compiler" >/dev/null; then
  echo "headers_alone: compiler '$compiler' not found (scripts/install-deps.sh installs clang-14)" >&2
  exit 1
fi
launcher=${DLOCK_COMPILER_LAUNCHER:-}
units=headers_alone/$(basename "$compiler")
rm -rf "$units"
failed=0
checked=0
for header in "$include_dir"/dlock/*.hpp "$include_dir"/dlock/detail/*.hpp "$include_dir"/dlock/testing/*.hpp "$include_dir"/dlock/postgres/*.hpp \
  "$include_dir"/dlock/sqlite/*.hpp "$include_dir"/dlock/mariadb/*.hpp; do
  name=${header#"$include_dir"/}
  checked=$((checked + 1))
  unit=$units/${name//\//_}.cpp
  mkdir -p "$units"
  printf '#include <%s>\n' "$name" >"$unit"
  if output=$($launcher "$compiler" "$@" -x c++ "$unit" 2>&1); then
    echo "ok    $name"
  else
    echo "FAIL  $name"
    printf '%s\n' "$output" | sed 's/^/      /'
    failed=$((failed + 1))
  fi
done
echo "$checked public headers compiled alone with $(basename "$compiler"), $failed failed"
[ "$checked" -gt 0 ] && [ "$failed" -eq 0 ]
