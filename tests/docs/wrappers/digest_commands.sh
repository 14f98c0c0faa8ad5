# docs/SECURITY.md offers two commands that compute the super digest: both must work, and agree.
# The first prints "super:password->super:<digest>", the second "<digest>".
set -eu
out=$(
# @snippet
)
printf '%s\n' "$out"
java_digest=$(printf '%s\n' "$out" | sed -n 1p)
openssl_digest=$(printf '%s\n' "$out" | sed -n 2p)
if [ -z "$openssl_digest" ] || [ "$java_digest" != "super:password->super:$openssl_digest" ]; then
  echo "the two commands do not print the same digest" >&2
  exit 1
fi
