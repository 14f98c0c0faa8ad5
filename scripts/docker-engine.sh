#!/usr/bin/env bash
# A Docker engine for the tests and the demo, started and stopped by this script (no systemd), and
# the images they use, built locally from Debian's packages (no registry needed).
#
#   scripts/docker-engine.sh start    starts dockerd unless ours already answers; prints its DOCKER_HOST
#   scripts/docker-engine.sh images   builds the base and ZooKeeper images unless present
#   scripts/docker-engine.sh stop     stops the dockerd this script started (by PID)
#   scripts/docker-engine.sh env      prints "export DOCKER_HOST=..." for a shell
#
# The engine leaves the machine's network as it found it: no iptables rules, no NAT, no bridge,
# no IP forwarding (--iptables=false --ip6tables=false --ip-masq=false --ip-forward=false
# --bridge=none); containers use the host's network (--network host) on their own loopback ports.
# It listens on a socket of its own (so it never meets another engine on this machine) and keeps
# its images in DLOCK_DOCKER_DIR (default /var/cache/dlock-docker): a second run on one machine
# finds them built. Images:
#   dlock/debian:bookworm     debootstrap --variant=minbase bookworm, from apt's own Debian mirror
#                             (scripts/debian-rootfs.sh, kept in /var/cache/dlock-rootfs)
#   dlock-zookeeper:debian    docker/zookeeper (Debian's zookeeper package)
# Needs root (dockerd, debootstrap) and the packages docker.io, debootstrap (scripts/install-deps.sh).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
state=${DLOCK_DOCKER_DIR:-/var/cache/dlock-docker}
socket="$state/docker.sock"
export DOCKER_HOST="unix://$socket"
source "$root/scripts/dependencies.sh"
docker=$(dependency docker)  # Debian's client; another one earlier on PATH may lack what we use
dockerd=$(dependency dockerd)

answers() { "$docker" version >/dev/null 2>&1; }

# The PID in our pidfile, if it is still our dockerd (a pidfile that survived a reboot may name
# another process now, which must not be signalled).
our_pid() {
  [ -f "$state/dockerd.pid" ] || return 1
  local pid
  pid=$(cat "$state/dockerd.pid")
  [ -n "$pid" ] && [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$dockerd" ] &&
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "--data-root $state/data" && echo "$pid"
}

start() {
  mkdir -p "$state"
  if answers; then echo "$DOCKER_HOST"; return; fi
  if pid=$(our_pid); then
    echo "docker-engine: dockerd $pid runs but does not answer on $socket" >&2
    exit 1
  fi
  rm -f "$socket" "$state/dockerd.pid"
  # setsid: the engine outlives this script, and a Ctrl-C in the caller's terminal does not reach it.
  setsid "$dockerd" --host "$DOCKER_HOST" --data-root "$state/data" --exec-root "$state/exec" \
    --pidfile "$state/dockerd.pid" --iptables=false --ip6tables=false --ip-masq=false --ip-forward=false \
    --bridge=none --storage-driver=overlay2 >"$state/dockerd.log" 2>&1 </dev/null &
  for _ in $(seq 1 300); do
    if answers; then echo "$DOCKER_HOST"; return; fi
    sleep 0.1
  done
  echo "docker-engine: dockerd did not answer within 30 s; its log:" >&2
  tail -n 30 "$state/dockerd.log" >&2
  exit 1
}

stop() {
  local pid
  if pid=$(our_pid); then
    # Containers first (by name prefix: ours), then the engine by PID; SIGKILL after 20 s.
    "$docker" ps -aq --filter name=dlock- 2>/dev/null | xargs -r "$docker" rm -f >/dev/null 2>&1 || true
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 200); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid" 2>/dev/null || true; fi
  fi
  rm -f "$state/dockerd.pid"
  # What the engine may leave mounted (its network namespace file, a container's layers): gone
  # too, so the machine is as it was and the state directory can be removed.
  awk -v dir="$state/" 'index($2, dir) == 1 {print $2}' /proc/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
}

images() {
  start >/dev/null
  if ! "$docker" image inspect dlock/debian:bookworm >/dev/null 2>&1; then
    # The pristine minimal root the fresh-machine check uses too (its sources.list names the
    # mirror it came from, for the images' apt-get).
    local tarball
    tarball=$(bash "$root/scripts/debian-rootfs.sh")
    "$docker" import "$tarball" dlock/debian:bookworm >/dev/null ||
      { echo "docker-engine: the base image could not be made from $tarball" >&2; return 1; }
  fi
  if ! "$docker" image inspect dlock-zookeeper:debian >/dev/null 2>&1; then
    echo "docker-engine: building dlock-zookeeper:debian"
    DOCKER_BUILDKIT=0 "$docker" build -q --network host --build-arg BASE_IMAGE=dlock/debian:bookworm \
      -t dlock-zookeeper:debian "$root/docker/zookeeper" >/dev/null
  fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  images) images ;;
  env) echo "export DOCKER_HOST=$DOCKER_HOST" ;;
  *) echo "usage: $0 start|images|stop|env" >&2; exit 2 ;;
esac
