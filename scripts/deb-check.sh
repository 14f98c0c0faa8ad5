#!/usr/bin/env bash
# The Debian package on a new machine: `cpack -G DEB` in a build tree makes libdlock-dev; a
# pristine Debian 12 root (scripts/fresh-root.sh) installs it with apt as a user would (its Depends
# come from the archive: a wrong or missing one fails here), with a compiler and CMake, then
# builds examples/hello_lock against /usr both ways a project finds dlock (find_package, and
# pkg-config), and runs the installed `dlockctl --version`.
#
#   bash scripts/deb-check.sh BUILD_DIR      (a configured and built tree, e.g. build/)
#
# Needs root. About a minute and a half (the packages' unpacking); nothing is left behind.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?"usage: $0 BUILD_DIR"}
build=$(cd "$build" && pwd)
version=$(sed -n 's/^project(dlock VERSION \([0-9.]*\).*/\1/p' "$repo/CMakeLists.txt")

source "$repo/scripts/fresh-root.sh"
fresh_root deb-check
debs=$(mktemp -d)
trap 'fresh_root_cleanup; rm -rf "$debs"' EXIT
(cd "$build" && cpack -G DEB -B "$debs" >"$debs/cpack.log" 2>&1) ||
  { cat "$debs/cpack.log" >&2; echo "deb-check: cpack -G DEB failed" >&2; exit 1; }
deb=$(find "$debs" -maxdepth 1 -name "libdlock-dev_${version}_*.deb" | head -n 1)
[ -n "$deb" ] || { ls "$debs" >&2; echo "deb-check: no libdlock-dev_${version}_*.deb made" >&2; exit 1; }
echo "deb-check: $(basename "$deb"): $(dpkg-deb -f "$deb" Depends)"

mkdir -p "$root/debs" "$root/hello"
cp "$deb" "$root/debs/"
cp "$repo/examples/hello_lock/CMakeLists.txt" "$repo/examples/hello_lock/hello_lock.cpp" "$root/hello/"
log="$fresh_root_dir/$(basename "$root").deb-check.log"
step() {  # step WHAT COMMAND...: runs COMMAND in the root, its output in the log, or says what failed
  if ! inside "${@:2}" >>"$log" 2>&1; then
    tail -n 30 "$log" >&2
    echo "deb-check: $1 failed in a fresh Debian 12 root (log: $log)" >&2
    exit 1
  fi
}
step "apt-get update" apt-get update -qq
step "installing $(basename "$deb") with build-essential cmake pkgconf" \
  env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  build-essential cmake pkgconf "/debs/$(basename "$deb")"
step "find_package(dlock) from /usr" sh -c 'cmake -S /hello -B /hello/build && cmake --build /hello/build'
step "pkg-config --cflags --libs dlock" \
  sh -c 'c++ -std=c++20 -o /hello/hello_pc /hello/hello_lock.cpp $(pkg-config --cflags --libs dlock)'
step "checking pkg-config's version" sh -c "[ \"\$(pkg-config --modversion dlock)\" = $version ]"
if [ -x "$build/tools/dlockctl/dlockctl" ]; then
  step "the installed dlockctl --version" sh -c "[ \"\$(dlockctl --version)\" = 'dlockctl $version' ]"
fi
rm -f "$log"
echo "deb-check: a fresh Debian 12 root installs $(basename "$deb") with apt and builds hello_lock with find_package and with pkg-config"
