#!/usr/bin/env bash
# Formats every C++ file of the tree with .clang-format (clang-format 14, Debian's clang-format-14).
# include/dlock/key.hpp is left as written: clang-format 14 cannot lay out its requires-clauses.
#
#   scripts/format.sh            rewrites the files in place
#   scripts/format.sh --check    changes nothing; fails naming each file that is not formatted
#                                (the test command runs this, as ctest's format_check)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/dependencies.sh"
clang_format=$(dependency clang-format)
cd "$root"
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h' | grep -v '^include/dlock/key\.hpp$')
if [ "${1:-}" = --check ]; then
  bad=()
  for file in "${files[@]}"; do
    if ! "$clang_format" --style=file "$file" | cmp -s - "$file"; then bad+=("$file"); fi
  done
  if [ ${#bad[@]} -gt 0 ]; then
    echo "format: ${#bad[@]} file(s) differ from .clang-format (run scripts/format.sh):" >&2
    printf '  %s\n' "${bad[@]}" >&2
    exit 1
  fi
  echo "format: ${#files[@]} files as .clang-format lays them out"
  exit 0
fi
"$clang_format" --style=file -i "${files[@]}"
