#!/usr/bin/env bash
# Prints the path of a pristine minimal Debian 12 root file system as a tarball, made once with
# debootstrap (--variant=minbase, from the mirror apt uses on this machine) and kept for later
# runs: the fresh-machine check (scripts/fresh-machine-check.sh) unpacks it to play a new machine,
# and the Docker backend (scripts/docker-engine.sh images) imports it as every image's base.
#   DLOCK_ROOTFS_DIR   where the tarball is kept. Default: /var/cache/dlock-rootfs
# Needs root and debootstrap (scripts/install-deps.sh). About a minute the first time.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/dependencies.sh"
dir=${DLOCK_ROOTFS_DIR:-/var/cache/dlock-rootfs}
tarball="$dir/bookworm-minbase.tar"

# The Debian mirror apt uses here (no other registry is reachable).
mirror() {
  local uri
  uri=$(grep -h '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' | grep -v security | head -n 1)
  # "deb [options] URI suite ...": the first field that looks like a URI.
  [ -n "$uri" ] || uri=$(grep -h '^deb ' /etc/apt/sources.list 2>/dev/null |
    awk '{for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; break}}' | head -n 1)
  echo "${uri:-http://deb.debian.org/debian}"
}


if [ ! -s "$tarball" ]; then
  mkdir -p "$dir"
  root=$(mktemp -d "$dir/rootfs.XXXXXX")  # under $dir: a failed run leaves nothing elsewhere
  trap 'rm -rf --one-file-system "$root"' EXIT
  echo "debian-rootfs: debootstrap bookworm from $(mirror) (about a minute)" >&2
  if ! "$(dependency debootstrap)" --variant=minbase bookworm "$root" "$(mirror)" >"$dir/debootstrap.log" 2>&1; then
    tail -n 20 "$dir/debootstrap.log" >&2
    echo "debian-rootfs: debootstrap failed (log: $dir/debootstrap.log)" >&2
    exit 1
  fi
  tar -C "$root" -cf "$tarball.part" .
  mv "$tarball.part" "$tarball"
fi
echo "$tarball"
