#!/usr/bin/env bash
# A throwaway PostgreSQL server for the storage tests (tests/web/test_store_postgres.py).
#   .ci/postgres.sh start DIR   installs Debian's postgresql when no server is found (as root, with apt-get),
#                               makes a cluster in DIR (owned by the postgres user when run as root), starts it
#                               on a unix socket in DIR only (no TCP), creates the database gpuplan_test and
#                               prints its SQLAlchemy URL for GPUPLAN_TEST_POSTGRES_URL
#   .ci/postgres.sh stop DIR    stops it
# Anything that fails prints why on stderr and exits non-zero; the caller then runs without PostgreSQL.
set -euo pipefail
cmd=${1:?start or stop}
dir=${2:?a folder for the cluster}

find_bin() {
  local name=$1 found
  found=$(command -v "$name" 2>/dev/null || true)
  if [ -z "$found" ]; then
    found=$(ls -d /usr/lib/postgresql/*/bin/"$name" 2>/dev/null | sort -V | tail -n 1 || true)
  fi
  printf '%s' "$found"
}

as_owner() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

initdb=$(find_bin initdb)
pg_ctl=$(find_bin pg_ctl)

if [ "$cmd" = stop ]; then
  [ -n "$pg_ctl" ] && [ -f "$dir/data/PG_VERSION" ] && as_owner "$pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  exit 0
fi

if [ -z "$initdb" ] || [ -z "$pg_ctl" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql) >/dev/null
    initdb=$(find_bin initdb)
    pg_ctl=$(find_bin pg_ctl)
  fi
fi
if [ -z "$initdb" ] || [ -z "$pg_ctl" ]; then
  echo "postgres.sh: no PostgreSQL server (initdb, pg_ctl) found or installable" >&2
  exit 1
fi
psql=$(find_bin psql)

mkdir -p "$dir"
if [ "$(id -u)" = 0 ]; then
  id postgres >/dev/null 2>&1 || useradd --system --home-dir "$dir" postgres
  chown postgres "$dir"
fi
as_owner "$initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-locale >"$dir/initdb.log" 2>&1
as_owner "$pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
  -o "-k $dir -c listen_addresses= -c fsync=off -c max_connections=50" start >/dev/null
as_owner "$psql" -h "$dir" -U postgres -d postgres -q -c "CREATE DATABASE gpuplan_test" >/dev/null
printf 'postgresql+psycopg://postgres@/gpuplan_test?host=%s\n' "$dir"
