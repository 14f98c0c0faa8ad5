#!/usr/bin/env bash
# The fresh-machine check: does scripts/install-deps.sh install everything the demo and the tests
# use (scripts/dependencies.list)? A machine that has run the tests before has packages installed
# by hand, which hide a missing install step; so this plays a new Debian 12 machine: a pristine
# minimal root (scripts/debian-rootfs.sh), install-deps.sh run inside it (chroot), then
# check-deps.sh inside it.
#
#   bash scripts/fresh-machine-check.sh                 the check; exit 1 naming what is missing
#   bash scripts/fresh-machine-check.sh --negative-control PACKAGE
#        first installs with PACKAGE taken out of install-deps.sh and requires check-deps to fail
#        naming it (the check can fail), then installs the rest and requires it to pass
#
# Needs root. Downloaded packages are shared with this machine's apt cache (a new machine
# downloads the same files; only the time differs). The root is unpacked under
# DLOCK_ROOTFS_DIR (default /var/cache/dlock-rootfs) and removed on exit, whatever happens; its
# mounts (/proc, /dev, the apt cache) are undone first.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
dir=${DLOCK_ROOTFS_DIR:-/var/cache/dlock-rootfs}
without=""
case "${1:-}" in
  "") ;;
  --negative-control)
    without=${2:?"--negative-control needs a package name, e.g. docker-compose"}
    grep -qw -- "$without" "$repo/scripts/install-deps.sh" ||
      { echo "fresh-machine-check: '$without' is not in scripts/install-deps.sh" >&2; exit 2; }
    ;;
  *) echo "usage: $0 [--negative-control PACKAGE]" >&2; exit 2 ;;
esac

source "$repo/scripts/fresh-root.sh"
fresh_root fresh-machine-check

# The repository's scripts and files, as a clone has them.
mkdir -p "$root/dlock"
if git -C "$repo" rev-parse --git-dir >/dev/null 2>&1; then
  (cd "$repo" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -) | tar -C "$root/dlock" -xf -
else
  tar -C "$repo" --exclude='./build*' -cf - . | tar -C "$root/dlock" -xf -
fi

install_log="$dir/$(basename "$root").install.log"
install() {  # install [PACKAGE-TO-LEAVE-OUT]
  local script=/dlock/scripts/install-deps.sh
  if [ -n "${1:-}" ]; then
    sed "s/\(^\|[[:space:]]\)$1\([[:space:]]\|$\)/\1\2/" "$root$script" >"$root/dlock/scripts/install-deps-without.sh"
    script=/dlock/scripts/install-deps-without.sh
  fi
  if ! inside bash "$script" >"$install_log" 2>&1; then
    tail -n 30 "$install_log" >&2
    echo "fresh-machine-check: $script failed in a fresh Debian 12 root" >&2
    exit 1
  fi
}

start=$SECONDS
if [ -n "$without" ]; then
  install "$without"
  if out=$(inside bash /dlock/scripts/check-deps.sh 2>&1); then
    echo "$out" >&2
    echo "fresh-machine-check: negative control FAILED: check-deps passed with $without left out of install-deps" >&2
    exit 1
  fi
  if ! grep -q "Debian package $without\$" <<<"$out"; then
    echo "$out" >&2
    echo "fresh-machine-check: negative control FAILED: check-deps failed but did not name $without" >&2
    exit 1
  fi
  echo "fresh-machine-check: negative control: with $without left out of install-deps, check-deps said:"
  sed 's/^/  | /' <<<"$out"
fi
install
if ! out=$(inside bash /dlock/scripts/check-deps.sh 2>&1); then
  echo "$out" >&2
  echo "fresh-machine-check: FAILED: scripts/install-deps.sh misses what scripts/dependencies.list needs" >&2
  exit 1
fi
rm -f "$install_log"
echo "fresh-machine-check: a fresh Debian 12 root has everything after install-deps.sh ($out; $((SECONDS - start)) s)"
