# Sourced by the shell scripts: `dependency NAME` prints the path (or module, glob, directory)
# scripts/dependencies.list gives NAME, and fails naming NAME when the list has no such entry.
dlock_dependencies_list="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/dependencies.list"

dependency() {
  local where
  where=$(awk -v name="$1" '$1 !~ /^#/ && $1 == name {print $3; exit}' "$dlock_dependencies_list")
  if [ -z "$where" ]; then
    echo "dependency: '$1' is not in $dlock_dependencies_list" >&2
    return 1
  fi
  echo "$where"
}
