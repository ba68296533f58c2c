#!/usr/bin/env bash
# A throwaway PostgreSQL cluster (Debian's package) on 127.0.0.1, for the Hub's scale-path tests.
#
#   bash scripts/setup_postgres.sh          # install if needed, start (idempotent); last line: the database URL
#   bash scripts/setup_postgres.sh stop     # stop the cluster (its folder stays for the next start)
#
# Settings (environment): VF_HUB_PG_DIR (default $TMPDIR/vf-hub-pg), VF_HUB_PG_PORT (55432),
# VF_HUB_PG_DB (vfhub). PostgreSQL refuses to run as root, so as root the cluster runs as the
# `postgres` user the package creates. The cluster trusts local connections and runs with
# fsync off: it holds test data only, and speed matters more there than surviving a power cut.
set -euo pipefail

DIR="${VF_HUB_PG_DIR:-${TMPDIR:-/tmp}/vf-hub-pg}"
PORT="${VF_HUB_PG_PORT:-55432}"
DB="${VF_HUB_PG_DB:-vfhub}"

pg_bindir() {
    ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1
}

if [[ -z "$(pg_bindir)" ]]; then
    if [[ "$(id -u)" != 0 ]]; then
        echo "setup_postgres: PostgreSQL is not installed; run as root (apt-get install postgresql)" >&2
        exit 1
    fi
    echo "setup_postgres: installing Debian's postgresql" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
fi
BIN="$(pg_bindir)"

as_owner() {
    if [[ "$(id -u)" == 0 ]]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

if [[ "${1:-start}" == "stop" ]]; then
    if [[ -f "$DIR/data/postmaster.pid" ]]; then
        as_owner "$BIN/pg_ctl" -D "$DIR/data" -m fast -w stop >&2
    fi
    exit 0
fi

mkdir -p "$DIR"
[[ "$(id -u)" == 0 ]] && chown postgres:postgres "$DIR"
if [[ ! -f "$DIR/data/PG_VERSION" ]]; then
    as_owner "$BIN/initdb" -D "$DIR/data" -U postgres --auth=trust -E UTF8 --no-sync >/dev/null
fi
if ! as_owner "$BIN/pg_ctl" -D "$DIR/data" status >/dev/null 2>&1; then
    as_owner "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 60 start -o \
        "-c listen_addresses=127.0.0.1 -c port=$PORT -c unix_socket_directories=$DIR \
         -c max_connections=300 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" >&2
fi
if ! "$BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -Atc "SELECT 1 FROM pg_database WHERE datname = '$DB'" \
        postgres | grep -q 1; then
    "$BIN/createdb" -h 127.0.0.1 -p "$PORT" -U postgres "$DB"
fi
echo "postgresql+psycopg://postgres@127.0.0.1:$PORT/$DB"
