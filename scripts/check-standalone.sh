#!/usr/bin/env bash
# Fails if a file tracked by git points outside the repository: at a sibling directory named
# "shared" (by a relative path, or as a bare "shared/<name>.md") or at an absolute path of the
# machine the project was written on (its work directory). Everything a reader needs lives in the
# repository (docs/); a pointer elsewhere is a dead link on every other machine. Takes well under
# a second.
#
# The patterns are spelled with brackets so that this file does not match itself.
set -uo pipefail
cd "$(dirname "$0")/.."
git grep -n -I -E '[.][.]/shared|/wor[k]/|(^|[^A-Za-z0-9_./-])shared/[A-Za-z_-]+[.]md'
case $? in
  0) echo "check-standalone: the lines above point outside the repository; point at docs/ instead" >&2
     exit 1 ;;
  1) echo "check-standalone: no references outside the repository" ;;
  *) echo "check-standalone: git grep failed (not a git checkout?)" >&2
     exit 1 ;;
esac
