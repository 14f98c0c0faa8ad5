#!/usr/bin/env bash
# The README's quick start as a new user follows it, timed, on a new machine: a pristine Debian 12
# root (scripts/fresh-root.sh) with a copy of this checkout in /root/dlock. Every `sh` block of
# the README's "Quick start" section runs there in order, as it is written (sudo left out: the
# root's user is root), then build/hello_lock runs twice, the second a second after the first, as
# the README's two terminals do: both must get the lock, the second only after the first
# released it, with the larger fencing token. Prints each step's time. By hand, not in the test
# command (about 8 minutes on 2 cores, most of it building the library):
#
#   bash scripts/quickstart-check.sh
#
# Needs root, and 127.0.0.1:2181 free on this machine (the root shares its network).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
if (exec 3<>/dev/tcp/127.0.0.1/2181) 2>/dev/null; then
  echo "quickstart-check: something already listens on 127.0.0.1:2181; the quick start's server needs it" >&2
  exit 1
fi
source "$repo/scripts/fresh-root.sh"
fresh_root quickstart-check
stop_server() { inside bash -c 'cd /root/dlock && bash scripts/zookeeper.sh stop' >/dev/null 2>&1 || true; }
trap 'stop_server; fresh_root_cleanup' EXIT

mkdir -p "$root/root/dlock"
(cd "$repo" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -) | tar -C "$root/root/dlock" -xf -
# The README's quick start: its sh blocks, in order, each a step.
awk '/^## Quick start/ {on = 1; next} /^## / {on = 0} on' "$repo/README.md" |
  awk '/^```sh/ {n++; inblock = 1; next} /^```/ {inblock = 0; next} inblock {print > (dir "/step-" n ".sh")}' \
    dir="$root/root"
steps=$(find "$root/root" -maxdepth 1 -name 'step-*.sh' | sort -V)
[ -n "$steps" ] || { echo "quickstart-check: no sh block in the README's Quick start" >&2; exit 1; }
log="$fresh_root_dir/$(basename "$root").quickstart.log"
start=$SECONDS
for step in $steps; do
  sed -i 's/^sudo //; s/^\(sudo \)\{0,1\}apt-get install /apt-get install -y -qq /' "$step"
  began=$SECONDS
  # apt-get update first, as on any new machine (its lists are empty).
  [ "$step" != "$(echo "$steps" | head -n 1)" ] || inside apt-get update -qq >>"$log" 2>&1
  if ! inside env DEBIAN_FRONTEND=noninteractive bash -c "cd /root/dlock && bash -euo pipefail /root/$(basename "$step")" \
    >>"$log" 2>&1; then
    tail -n 30 "$log" >&2
    echo "quickstart-check: this step of the README failed (log: $log):" >&2
    cat "$step" >&2
    exit 1
  fi
  echo "quickstart-check: $((SECONDS - began)) s: $(head -n 1 "$step")"
done
# The two terminals.
inside bash -c 'cd /root/hello_lock && { build/hello_lock > /root/one.out & sleep 1; build/hello_lock > /root/two.out; wait; }' \
  >>"$log" 2>&1 || { tail -n 20 "$log" >&2; echo "quickstart-check: a hello_lock failed" >&2; exit 1; }
one=$root/root/one.out two=$root/root/two.out
sed 's/^/  1 | /' "$one"; sed 's/^/  2 | /' "$two"
token() { sed -n 's/.*got the lock, fencing token \([0-9]*\)$/\1/p' "$1"; }
[ -n "$(token "$one")" ] && [ -n "$(token "$two")" ] && [ "$(token "$two")" -gt "$(token "$one")" ] &&
  grep -q "released the lock" "$one" && grep -q "released the lock" "$two" ||
  { echo "quickstart-check: the two processes did not take turns as the README says" >&2; exit 1; }
rm -f "$log"
echo "quickstart-check: the README's quick start works on a fresh Debian 12 root in $((SECONDS - start)) s"
