#!/bin/bash
# Creates the database cluster in PGDATA on first start (superuser POSTGRES_USER with password
# POSTGRES_PASSWORD, database POSTGRES_DB), then runs the server in the foreground as `postgres`.
#   POSTGRES_PASSWORD  required on first start (password authentication over TCP)
#   POSTGRES_USER      superuser name (default postgres)
#   POSTGRES_DB        database created on first start (default: POSTGRES_USER)
#   PGDATA             cluster directory (default /var/lib/postgresql/data)
#   PGPORT             the port the server listens on (default 5432; PostgreSQL reads it itself)
# Arguments: "postgres" followed by server options (-c name=value ...), as with the official image.
set -euo pipefail
user=${POSTGRES_USER:-postgres}
db=${POSTGRES_DB:-$user}
data=${PGDATA:-/var/lib/postgresql/data}
as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }

mkdir -p "$data" /run/postgresql
# A cluster made by another image (another uid for postgres) is taken over, files included.
find "$data" /run/postgresql \! -user postgres -exec chown postgres:postgres {} +
chmod 0700 "$data"
# An existing cluster (PG_VERSION) is used as it is, whoever made it: never removed here. (As with
# the official image, a first start killed before the database was created leaves a cluster
# without it: `down -v` and start again.)
if [ ! -s "$data/PG_VERSION" ]; then
  if [ -z "${POSTGRES_PASSWORD:-}" ]; then
    echo "dlock-postgres: POSTGRES_PASSWORD is not set (it is required to create the database)" >&2
    exit 1
  fi
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  chown postgres "$pwfile"
  as_postgres initdb -D "$data" -U "$user" --pwfile="$pwfile" -E UTF8 --no-locale \
    --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  # Other containers and the host reach the server over TCP, with the password.
  echo "host all all all scram-sha-256" >>"$data/pg_hba.conf"
  if [ "$db" != postgres ]; then
    echo "CREATE DATABASE \"$db\" OWNER \"$user\"" | as_postgres postgres --single -D "$data" postgres >/dev/null
  fi
fi
[ "${1:-}" = postgres ] && shift
exec setpriv --reuid=postgres --regid=postgres --init-groups postgres -D "$data" -c listen_addresses='*' "$@"
