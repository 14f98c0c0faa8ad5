# A throwaway Debian 12 root, playing a new machine: sourced by scripts/fresh-machine-check.sh
# (does install-deps.sh install everything?) and scripts/deb-check.sh (does the .deb install and
# build a user's program?).
#
#   source scripts/fresh-root.sh
#   fresh_root NAME        unpacks a pristine minimal root (scripts/debian-rootfs.sh) into $root,
#                          under DLOCK_ROOTFS_DIR (default /var/cache/dlock-rootfs), with this
#                          machine's apt sources, resolver and package cache, /proc and /dev; on
#                          exit, whatever happens, its mounts are undone and it is removed. NAME
#                          prefixes its messages.
#   fresh_root_bind SOURCE TARGET   a directory of this machine at TARGET inside the root
#   inside COMMAND...      runs COMMAND in the root, with a clean environment
# Needs root.
fresh_root_dir=${DLOCK_ROOTFS_DIR:-/var/cache/dlock-rootfs}
fresh_root_mounts=()

fresh_root_cleanup() {
  local i
  for ((i = ${#fresh_root_mounts[@]} - 1; i >= 0; i--)); do umount -l "${fresh_root_mounts[i]}" 2>/dev/null || true; done
  # Nothing may be mounted below the root when it is removed (a bound /dev would lose its nodes).
  if awk -v d="$root/" 'index($2, d) == 1 {found = 1} END {exit !found}' /proc/mounts; then
    echo "$fresh_root_name: mounts left under $root; not removing it" >&2
    return
  fi
  rm -rf --one-file-system "$root"
}

fresh_root_bind() {
  mkdir -p "$root$2"
  mount --bind "$1" "$root$2"
  fresh_root_mounts+=("$root$2")
}

fresh_root() {
  fresh_root_name=$1
  local tarball
  tarball=$(bash "$(dirname "${BASH_SOURCE[0]}")/debian-rootfs.sh")
  root=$(mktemp -d "$fresh_root_dir/fresh.XXXXXX")
  trap fresh_root_cleanup EXIT
  tar -C "$root" -xf "$tarball"
  # The machine's own apt sources (Debian 12, its updates and security suites, as a new machine
  # of this kind has), its resolver, and its package cache.
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  rm -f "$root/etc/apt/sources.list"
  cp -a /etc/apt/sources.list.d/*.sources "$root/etc/apt/sources.list.d/" 2>/dev/null || true
  [ ! -f /etc/apt/sources.list ] || cp /etc/apt/sources.list "$root/etc/apt/sources.list"
  # Packages are installed, not started: no service of theirs (PostgreSQL, Docker) runs in the root.
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  chmod +x "$root/usr/sbin/policy-rc.d"
  mount -t proc proc "$root/proc"
  fresh_root_mounts+=("$root/proc")
  fresh_root_bind /dev /dev
  fresh_root_bind /var/cache/apt/archives /var/cache/apt/archives
}

inside() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"; }
