#!/usr/bin/env bash
# Checks every entry of scripts/dependencies.list in a second or two, before anything is built:
# names each one missing with the Debian package that provides it, and exits 1 if any is.
#   bash scripts/check-deps.sh            all entries
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
list="$here/dependencies.list"
repo=$(cd "$here/.." && pwd)

missing=()
modules=()
while read -r name kind where package _; do
  case "$name" in ''|'#'*) continue ;; esac
  ok=1
  case "$kind" in
    program) [ -x "$where" ] && [ -f "$where" ] || ok=0 ;;
    file|jar) [ -f "$where" ] || ok=0 ;;
    glob) compgen -G "$where" >/dev/null || ok=0 ;;
    python) modules+=("$name:$where:$package"); continue ;;
    image) [ "$where" = - ] || [ -f "$repo/$where/Dockerfile" ] || ok=0 ;;
    *) echo "check-deps: $list: '$name' has kind '$kind'; the kinds are program, file, jar, glob, python, image" >&2
       exit 2 ;;
  esac
  [ "$ok" = 1 ] || missing+=("$name ($kind $where): Debian package $package")
done <"$list"

# Every module in one interpreter start; each import on its own, so one missing names itself.
python=$(awk '$1 == "python3" {print $3}' "$list")
if [ "${#modules[@]}" -gt 0 ]; then
  if [ ! -x "$python" ]; then
    for entry in "${modules[@]}"; do
      IFS=: read -r name where package <<<"$entry"
      missing+=("$name (python module $where): Debian package $package")
    done
  else
    wanted=""
    for entry in "${modules[@]}"; do
      IFS=: read -r _ where _ <<<"$entry"
      wanted+="$where "
    done
    absent=$("$python" - $wanted <<'PY'
import importlib, sys
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except Exception:
        print(name)
PY
)
    for entry in "${modules[@]}"; do
      IFS=: read -r name where package <<<"$entry"
      if grep -qx "$where" <<<"$absent"; then missing+=("$name (python module $where): Debian package $package"); fi
    done
  fi
fi

if [ "${#missing[@]}" -gt 0 ]; then
  echo "check-deps: ${#missing[@]} missing:" >&2
  printf '  %s\n' "${missing[@]}" >&2
  echo "check-deps: install them with: bash scripts/install-deps.sh" >&2
  exit 1
fi
echo "check-deps: all $(grep -cv '^\s*\(#\|$\)' "$list") dependencies present"
